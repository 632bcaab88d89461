-- Entitlement API part 2 (docs/api.md): one entitlement's history, and expiry. Runs with search_path = entitlement.

-- When an ACTIVE entitlement ends by itself; null = never. The scheduler revokes it (audit action EXPIRE).
alter table entitlements add column expires_at timestamptz;
-- The scheduler's claim: the due ACTIVE entitlements, soonest first, and the next due time for its wake-up.
create index entitlements_expiry_idx on entitlements (expires_at) where status = 'ACTIVE' and expires_at is not null;

-- The entitlement's version after the change. Null on rows written before this migration: their history is ordered
-- by time only, after (older than) every versioned row.
alter table entitlement_audit add column version bigint;
-- Adding a nullable column with no default does not rewrite the table, nor does replacing this check (one scan).
alter table entitlement_audit drop constraint entitlement_audit_action_check;
alter table entitlement_audit add constraint entitlement_audit_action_check
  check (action in ('GRANT', 'REVOKE', 'EXPIRE', 'EXTEND'));

-- History of one entitlement, newest first: the version orders the changes (occurred_at is the request's clock,
-- taken before the row lock, so two racing changes can commit in the other order); time and id break ties on
-- unversioned rows. Keyset paging walks this index.
create index entitlement_audit_history_idx on entitlement_audit
  (user_id, stock_keeping_unit, (coalesce(version, -1)) desc, occurred_at desc, audit_id desc);
