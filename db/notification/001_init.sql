-- Notification schema (docs/architecture.md). Runs with search_path = notification.

create table processed_events (
  event_id uuid primary key,
  processed_at timestamptz not null default now()
);
create index processed_events_processed_at_idx on processed_events (processed_at);

create table notifications (
  notification_id uuid primary key,
  event_id uuid not null,
  user_id text not null,
  type text not null,
  occurred_at timestamptz not null,
  payload_json jsonb not null,
  status text not null check (status in ('PENDING', 'PROCESSING', 'SENT', 'FAILED')),
  locked_by text,
  locked_at timestamptz,
  lease_until timestamptz,
  attempt_count int not null default 0,
  next_retry_at timestamptz,
  created_at timestamptz not null default now(),
  sent_at timestamptz,
  last_error text
);
create index notifications_pending_idx on notifications (status, next_retry_at, created_at);
create index notifications_processing_idx on notifications (status, lease_until, created_at);
create index notifications_user_idx on notifications (user_id, created_at);
create index notifications_event_idx on notifications (event_id);
create index notifications_retention_sent_failed_idx on notifications (created_at) where status in ('SENT', 'FAILED');
create index notifications_retention_active_idx on notifications (created_at) where status in ('PENDING', 'PROCESSING');

create table notification_dlq (
  dlq_id uuid primary key,
  notification_id uuid not null,
  event_id uuid not null,
  payload_json jsonb not null,
  error_message text not null,
  created_at timestamptz not null default now(),
  constraint notification_dlq_notification_id_uniq unique (notification_id)
);
create index notification_dlq_event_idx on notification_dlq (event_id, created_at);

-- JetStream MAX_DELIVERIES / MSG_TERMINATED advisories of the entitlement consumer. Beyond the Java original's
-- stream_seq, it keeps where the message lives and why it was given up, so `nats-dlq replay` can fetch and
-- republish it.
create table notification_nats_dlq (
  stream_seq bigint primary key,
  created_at timestamptz not null default now(),
  stream text,
  consumer text,
  kind text check (kind in ('MAX_DELIVERIES', 'MSG_TERMINATED')),
  deliveries bigint,
  replayed_at timestamptz
);
