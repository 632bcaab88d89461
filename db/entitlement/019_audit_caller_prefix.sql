-- Audit search by a caller's prefix (`console:*`: every console operator) as well as by a whole caller. The caller
-- index becomes a text_pattern_ops one: it compares bytes, whatever the database's collation, so a prefix is one range
-- of it (caller ~>=~ prefix and caller ~<~ its upper bound), and its `=` still serves the exact search, which the
-- previous release runs; that release's index is then dropped, so writers keep one caller index, not two.
-- As for 017: on a large audit log, build each month's copy beforehand with CREATE INDEX CONCURRENTLY under the same
-- definition (docs/operations.md); this migration then attaches them instead of building.
create index if not exists entitlement_audit_caller_prefix_idx
  on entitlement_audit (caller text_pattern_ops, occurred_at, audit_id);
drop index if exists entitlement_audit_caller_time_idx;
