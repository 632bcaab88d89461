-- Expiry as the scheduler's due work (docs/api.md; src/entitlement/expiry/). One row per entitlement that was ever
-- given an expiry: a grant or an extension (re)sets it PENDING, due at the expiry. The entitlement's own expires_at
-- stays the truth: executing a row revokes the entitlement only if it is still ACTIVE and its expires_at has passed,
-- so a row made stale by a revoke, a re-grant without expiry or an extension finishes without effect.
create table entitlement_expiries (
  user_id text not null,
  stock_keeping_unit text not null,
  -- The expiry this row was scheduled for; kept after execution, so lateness = executed_at - expires_at.
  expires_at timestamptz not null,
  status text not null check (status in ('PENDING', 'PROCESSING', 'DONE', 'FAILED')),
  -- When the scheduler next looks at the row: expires_at, then a retry time, and while PROCESSING the end of the
  -- claim's lease. Never before expires_at.
  due_at timestamptz not null,
  attempt_count int not null default 0,
  locked_by text,
  locked_at timestamptz,
  last_error text,
  -- When the expiry ran (whether it revoked the entitlement or found it revoked or extended already).
  executed_at timestamptz,
  trace_id text,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  primary key (user_id, stock_keeping_unit),
  check (due_at >= expires_at)
);
-- The scheduler's claim and its next-due-time probe: an ordered scan of the unfinished rows only.
create index entitlement_expiries_due_idx on entitlement_expiries (due_at) where status in ('PENDING', 'PROCESSING');
create index entitlement_expiries_failed_idx on entitlement_expiries (updated_at) where status = 'FAILED';

-- Wakes the scheduler (LISTEN entitlement_due) with the earliest due time a statement scheduled, in epoch
-- milliseconds, as point reservations do. Grants insert rows; a re-grant or an extension updates one (an upsert fires
-- the update trigger for the rows that conflicted), and a transition table belongs to one event only: two triggers.
create function notify_entitlement_expiries_due() returns trigger language plpgsql as $$
declare
  earliest timestamptz;
begin
  select min(due_at) into earliest from scheduled where status = 'PENDING';
  if earliest is not null then
    perform pg_notify('entitlement_due', (floor(extract(epoch from earliest) * 1000))::bigint::text);
  end if;
  return null;
end $$;
create trigger entitlement_expiries_insert_notify after insert on entitlement_expiries
  referencing new table as scheduled
  for each statement execute function notify_entitlement_expiries_due();
create trigger entitlement_expiries_update_notify after update on entitlement_expiries
  referencing new table as scheduled
  for each statement execute function notify_entitlement_expiries_due();
