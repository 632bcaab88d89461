-- Notifications sent through POST /v1/notifications (docs/api.md "Sending notifications"). Runs with
-- search_path = notification.
--
-- One row per caller and Idempotency-Key, committed with the request's notifications: a retry finds it and answers as
-- the first time, another body under the same key is refused, and a key is new again after expires_at. Each request's
-- notifications carry its request_id as their event_id, so notifications_event_user_key makes "one notification per
-- request and recipient" the database's rule too, across replicas and crashes.
create table notification_requests (
  caller text not null,
  idem_key text not null,
  request_hash text not null,
  request_id uuid not null unique,
  recipients int not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  primary key (caller, idem_key)
);
create index notification_requests_expires_idx on notification_requests (expires_at);

-- What a sent notification may add; null for every other notification. Nullable without a default, so adding them
-- rewrites nothing, and the previous release, which neither reads nor writes them, goes on storing and delivering
-- during a rolling upgrade.
--   collapse_key: a newer notification with the same key for the same player marks the older read.
--   expires_at: after it the notification is no longer delivered (to the channel or an endpoint).
--   expired_at: when a delivery found it expired. No new status: an expired notification ends SENT (the status the
--     previous release already treats as final, never retried nor parked) with expired_at set and sent_at null, so
--     no CHECK constraint changes and no status value appears that the previous release could not read.
alter table notifications
  add column collapse_key text,
  add column expires_at timestamptz,
  add column expired_at timestamptz;
-- The older notifications a newer one supersedes: the player's unread rows with that key.
create index notifications_user_collapse_idx on notifications (user_id, collapse_key)
  where collapse_key is not null and read_at is null;

-- An endpoint delivery found expired ends SENT with expired_at set, for the same reason.
alter table webhook_deliveries add column expired_at timestamptz;
