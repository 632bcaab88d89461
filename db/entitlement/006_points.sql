-- Points (docs/api.md): point reservations the scheduler executes, the ledger, the balances, their audit;
-- and a subject per outbox event, so the one relay publishes PointsEvent on points.events beside EntitlementEvent.

-- null: the relay's configured entitlement subject (every row written before this migration, and every entitlement
-- event, which keep their insert unchanged).
alter table outbox_events add column subject text;

create table point_reservations (
  reservation_id uuid primary key,
  user_id text not null,
  point_amount bigint not null check (point_amount between 1 and 1000000000),
  execute_at timestamptz not null,
  reason text,
  status text not null check (status in ('PENDING', 'PROCESSING', 'DONE', 'FAILED', 'CANCELLED')),
  -- When the scheduler next looks at the row: execute_at, then the retry time after a failure, and while PROCESSING
  -- the end of the claim's lease (a claim not finalized by then is taken over). Never before execute_at.
  due_at timestamptz not null,
  attempt_count int not null default 0,
  locked_by text,
  locked_at timestamptz,
  last_error text,
  executed_at timestamptz,
  transaction_id uuid,
  trace_id text,
  created_by text,     -- the caller (token name); null when authentication is disabled
  created_at timestamptz not null,
  updated_at timestamptz not null,
  check (due_at >= execute_at)
);
-- The scheduler's claim and its next-due-time probe: an ordered scan of the unfinished rows only.
create index point_reservations_due_idx on point_reservations (due_at) where status in ('PENDING', 'PROCESSING');
-- Retention of DONE and CANCELLED rows, and `points stats`.
create index point_reservations_finished_idx on point_reservations (updated_at)
  where status in ('DONE', 'CANCELLED');
create index point_reservations_failed_idx on point_reservations (updated_at) where status = 'FAILED';

-- The ledger. reservation_id is unique: the seed's idempotency key, the last line of defence against a double grant
-- (`insert ... on conflict do nothing`; the balance only moves when the insert did).
create table point_transactions (
  transaction_id uuid primary key,
  reservation_id uuid not null unique,
  user_id text not null,
  point_amount bigint not null,
  reason text,
  created_at timestamptz not null
);
create index point_transactions_user_idx on point_transactions (user_id, created_at desc, transaction_id desc);

create table point_balances (
  user_id text primary key,
  balance bigint not null check (balance >= 0),
  updated_at timestamptz not null
);

create table point_audit (
  audit_id uuid primary key,
  occurred_at timestamptz not null,
  reservation_id uuid not null,
  user_id text not null,
  action text not null check (action in ('RESERVE', 'CANCEL', 'EXECUTE', 'FAIL', 'REQUEUE')),
  caller text,
  trace_id text,
  detail jsonb
);
create index point_audit_reservation_idx on point_audit (reservation_id, occurred_at);

-- Wakes the scheduler (LISTEN entitlement_due) with the earliest due time a statement inserted, in epoch
-- milliseconds, so a sleeping scheduler wakes only when the new work is due before its next wake-up.
-- Every kind of due work notifies this channel with the same payload (src/entitlement/scheduler/).
create function notify_point_reservations_due() returns trigger language plpgsql as $$
declare
  earliest timestamptz;
begin
  select min(due_at) into earliest from inserted where status = 'PENDING';
  if earliest is not null then
    perform pg_notify('entitlement_due', (floor(extract(epoch from earliest) * 1000))::bigint::text);
  end if;
  return null;
end $$;
create trigger point_reservations_due_notify after insert on point_reservations
  referencing new table as inserted
  for each statement execute function notify_point_reservations_due();
