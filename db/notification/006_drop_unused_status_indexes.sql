-- notifications_pending_idx (status, next_retry_at, created_at) and notifications_processing_idx (status, lease_until,
-- created_at) serve no query: the delivery claim and its backlog count walk notifications_retention_active_idx (created_at
-- of the PENDING and PROCESSING rows), with or without these two (EXPLAIN ANALYZE over 100,000 SENT, 20,000 due and
-- 50,000 not yet due rows). Yet every version of a notification (PENDING, PROCESSING, SENT; none is a HOT update, since
-- status is in index predicates) added an entry to each: 6 of its 18 index entries (docs/benchmarks.md "Pipeline cost").
drop index notifications_pending_idx;
drop index notifications_processing_idx;
