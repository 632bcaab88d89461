-- One push per (notification, device), claimed, retried and finished on its own like an endpoint delivery
-- (docs/push.md). Runs with search_path = notification.

create table push_deliveries (
  device_id uuid not null references player_devices on delete cascade,
  notification_id uuid not null,
  -- The push service (the subscription endpoint's origin, or 'fcm'): the claim gives each its own slots, so one that
  -- hangs holds only its own pushes.
  service text not null,
  status text not null check (status in ('PENDING', 'PROCESSING', 'SENT', 'FAILED', 'EXPIRED')),
  attempt_count int not null default 0,
  -- When a PENDING push is due, or when a PROCESSING one's lease ends: one column, so one index serves the claim.
  next_attempt_at timestamptz not null,
  locked_by text,
  last_error text,
  last_status_code int,
  sent_at timestamptz,
  created_at timestamptz not null,
  primary key (device_id, notification_id)
);
create index push_deliveries_due_idx on push_deliveries (service, next_attempt_at)
  where status in ('PENDING', 'PROCESSING');
create index push_deliveries_retention_idx on push_deliveries (created_at)
  where status not in ('PENDING', 'PROCESSING');

-- The fan-out runs in the statement that stores notifications, whichever statement and release it is (the consumer's,
-- the send API's, and during a rolling upgrade the previous release's, which knows nothing of devices), as the
-- endpoints' fan-out does (009): one insert per stored batch, an index lookup of the batch's users' devices. A player
-- who turned push off, for everything or for the type, gets no row; the inbox and the stream are not affected.
create function fan_out_to_player_devices() returns trigger
language plpgsql set search_path from current as $$
begin
  insert into push_deliveries (device_id, notification_id, service, status, next_attempt_at, created_at)
  select d.device_id, n.notification_id,
         case when d.platform = 'fcm' then 'fcm' else substring(d.endpoint from '^[a-z]+://[^/?#]+') end,
         'PENDING', n.created_at, n.created_at
  from stored n
  join player_devices d on d.user_id = n.user_id
  left join player_preferences p on p.user_id = n.user_id
  where p.user_id is null or (p.push and coalesce((p.types -> n.type ->> 'push')::boolean, true))
  on conflict do nothing;
  return null;
end
$$;

create trigger notifications_push_fan_out after insert on notifications
  referencing new table as stored
  for each statement execute function fan_out_to_player_devices();
