-- Entitlement schema (docs/architecture.md). Runs with search_path = entitlement.

create table entitlements (
  user_id text not null,
  stock_keeping_unit text not null,
  status text not null check (status in ('ACTIVE', 'REVOKED')),
  granted_at timestamptz,
  revoked_at timestamptz,
  source text,          -- request.reason
  source_id text,       -- request.purchase_id
  version bigint not null default 0,
  updated_at timestamptz not null default now(),
  primary key (user_id, stock_keeping_unit)
);
create index entitlements_user_updated_idx on entitlements (user_id, updated_at desc);

-- Idempotency records are scoped per caller (the token name; '' when authentication is disabled).
create table idempotency_keys (
  caller text not null default '',
  idem_key text not null,
  request_hash text not null,
  response_code int not null,
  response_body jsonb not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (caller, idem_key)
);
create index idempotency_expires_idx on idempotency_keys (expires_at);

create table outbox_events (
  event_id uuid primary key,
  event_type text not null,            -- EntitlementGranted / EntitlementRevoked
  aggregate_key text not null,         -- "user_id:stock_keeping_unit"
  payload jsonb not null,
  status text not null check (status in ('PENDING', 'IN_FLIGHT', 'PUBLISHED', 'FAILED')),
  attempt_count int not null default 0,
  next_retry_at timestamptz,           -- null = immediately
  created_at timestamptz not null default now(),
  published_at timestamptz,
  locked_by text,
  locked_at timestamptz,
  lease_until timestamptz,
  last_error text
);
create index outbox_pick_idx on outbox_events (status, next_retry_at, created_at);
create index outbox_inflight_lease_idx on outbox_events (lease_until, created_at) where status = 'IN_FLIGHT';
create index outbox_published_at_idx on outbox_events (published_at) where status = 'PUBLISHED';

-- Wakes the relay (LISTEN entitlement_outbox) when new events commit; the poll interval stays as the safety net.
create function notify_outbox() returns trigger language plpgsql as $$
begin
  perform pg_notify('entitlement_outbox', '');
  return null;
end $$;
create trigger outbox_events_notify after insert on outbox_events
  for each statement execute function notify_outbox();

create table entitlement_audit (
  audit_id uuid primary key,
  occurred_at timestamptz not null default now(),
  user_id text not null,
  stock_keeping_unit text not null,
  action text not null check (action in ('GRANT', 'REVOKE')),
  source text,
  source_id text,
  request_id text,     -- the Idempotency-Key, as in the Java original
  detail jsonb,
  caller text,         -- who made the change (token name); null when authentication is disabled
  trace_id text
);
