-- The database's pace for a grant: the least a grant must write, as plain tables. The entitlement row, an audit row,
-- an outbox row and an idempotency record, each with only the key it needs, and the one index a relay needs to find
-- unpublished rows; no triggers, no functions. pgbench of pace-grant.pgbench.sql on these tables, in the same run and
-- on the same cluster as the API's measurement, is what the API's grants per second are divided by
-- (api-alone.ts). Load it into an empty database: psql -f pace-schema.sql DBNAME
create table entitlements (user_id text not null, sku text not null, status text not null, version bigint not null,
  updated_at timestamptz not null default now(), primary key (user_id, sku));
create table idempotency_keys (idem_key text primary key, request_hash text not null, response_status int not null,
  response_body jsonb not null, expires_at timestamptz not null);
create table outbox_events (event_id uuid primary key, event_type text not null, aggregate_key text not null,
  payload jsonb not null, status text not null default 'PENDING', attempt_count int not null default 0,
  next_retry_at timestamptz, lease_until timestamptz, locked_by text, locked_at timestamptz, last_error text,
  created_at timestamptz not null default now(), published_at timestamptz);
create index on outbox_events (status, next_retry_at, created_at);
create table entitlement_audit (audit_id uuid primary key default gen_random_uuid(), user_id text, sku text,
  action text, source text, source_id text, request_id text, detail jsonb, occurred_at timestamptz default now());
