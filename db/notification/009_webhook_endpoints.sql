-- Webhook endpoints registered through the admin API (docs/webhooks.md). Each notification stored fans out to one
-- webhook_deliveries row per enabled endpoint subscribed to its type; each delivery is claimed, retried and finished
-- on its own, and every attempt is logged in webhook_attempts. Runs with search_path = notification.

create table webhook_endpoints (
  endpoint_id uuid primary key,
  url text not null,
  description text not null default '',
  -- null: every type
  event_types text[],
  enabled boolean not null default true,
  disabled_reason text,
  -- The signing secret, encrypted with NOTIFICATION_ENDPOINT_SECRET_KEY (docs/decisions.md): a dump alone does not
  -- reveal it. During a rotation's overlap the previous one is kept until previous_secret_until.
  secret_ciphertext text not null,
  previous_secret_ciphertext text,
  previous_secret_until timestamptz,
  -- Start of the current run of failed attempts (null after any success): auto-disable measures from it.
  failing_since timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index webhook_endpoints_created_idx on webhook_endpoints (created_at, endpoint_id);

create table webhook_deliveries (
  endpoint_id uuid not null references webhook_endpoints on delete cascade,
  notification_id uuid not null,
  status text not null check (status in ('PENDING', 'PROCESSING', 'SENT', 'FAILED')),
  attempt_count int not null default 0,
  -- When a PENDING delivery is due, or when a PROCESSING one's lease ends: one column, so one index serves the claim.
  next_attempt_at timestamptz not null,
  locked_by text,
  last_error text,
  last_status_code int,
  sent_at timestamptz,
  -- The notification's created_at, copied: replay windows and retention read it without the notifications table.
  created_at timestamptz not null,
  replay_id uuid,
  primary key (endpoint_id, notification_id)
);
create index webhook_deliveries_due_idx on webhook_deliveries (endpoint_id, next_attempt_at)
  where status in ('PENDING', 'PROCESSING');
create index webhook_deliveries_retention_idx on webhook_deliveries (created_at) where status in ('SENT', 'FAILED');

create table webhook_attempts (
  attempt_id bigint generated always as identity primary key,
  endpoint_id uuid not null references webhook_endpoints on delete cascade,
  notification_id uuid not null,
  attempt int not null,
  at timestamptz not null,
  status_code int,
  duration_ms int not null,
  error text,
  response_excerpt text
);
create index webhook_attempts_endpoint_idx on webhook_attempts (endpoint_id, attempt_id desc);
create index webhook_attempts_at_idx on webhook_attempts (at);

-- The fan-out runs in the statement that stores notifications, whichever release's statement it is: a replica of the
-- previous release storing events during a rolling upgrade fans out too, and the storing statement itself stays as it
-- was. Statement-level with a transition table: one insert per stored batch, and a join against an empty table when
-- no endpoint is registered.
create function fan_out_to_webhook_endpoints() returns trigger
language plpgsql set search_path from current as $$
begin
  insert into webhook_deliveries (endpoint_id, notification_id, status, next_attempt_at, created_at)
  select e.endpoint_id, n.notification_id, 'PENDING', n.created_at, n.created_at
  from stored n
  join webhook_endpoints e on e.enabled and (e.event_types is null or n.type = any (e.event_types))
  on conflict do nothing;
  return null;
end
$$;

create trigger notifications_fan_out after insert on notifications
  referencing new table as stored
  for each statement execute function fan_out_to_webhook_endpoints();
