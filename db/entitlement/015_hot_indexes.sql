-- Every index on a table written by each command must be read by a named query (docs/architecture.md, "Indexes").
--
-- outbox_pick_idx held every row and changed on every state change of every event. Of the relay's claim it served
-- only the retry branch (PENDING with a retry time); new events use outbox_fresh_idx, lease-expired ones
-- outbox_inflight_lease_idx. Retry rows are few: a partial index of them serves that branch, and the failure gauge
-- gets its own partial index of the FAILED rows, so an event on the normal path enters neither.
drop index outbox_pick_idx;
create index outbox_retry_idx on outbox_events (next_retry_at, created_at)
  where status = 'PENDING' and next_retry_at is not null;
create index outbox_failed_idx on outbox_events (created_at) where status = 'FAILED';
-- The scheduler reads expiries from entitlement_expiries; nothing reads entitlements by expires_at any more.
drop index entitlements_expiry_idx;
-- point_audit is written by every points command and read by no query of the service.
drop index point_audit_reservation_idx;
