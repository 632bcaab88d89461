-- The delivery claim takes PENDING rows whose next_retry_at is null or past and PROCESSING rows whose lease expired.
-- With one OR over them it walked notifications_retention_active_idx in created_at order (the service's generic plan)
-- and read every PENDING row not due yet: 24-34 ms a claim with 50,000 future retries (a webhook receiver down). The
-- claim now has one branch per kind of due row, each an index range scan of its due rows only (docs/benchmarks.md
-- "Delivery claim with future retries"). Partial indexes: a version of a notification takes an entry in one of them at
-- most (PENDING first attempt, PENDING retry, or PROCESSING), none for SENT or FAILED.
create index notifications_fresh_idx on notifications (created_at) where status = 'PENDING' and next_retry_at is null;
create index notifications_retry_due_idx on notifications (next_retry_at) where status = 'PENDING' and next_retry_at is not null;
create index notifications_lease_idx on notifications (lease_until) where status = 'PROCESSING';
