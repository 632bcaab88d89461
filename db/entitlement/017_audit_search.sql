-- Audit search (the support console's /console/audit): the audit log newest first, filtered by SKU, caller, user,
-- action and time range, one page at a time by the key (occurred_at, audit_id). Each index serves the filters that
-- lead with its first column; the time index serves the rest (no filter, an action, a time range alone), its range
-- pruned to the months asked for. A user's rows are found through entitlement_audit_history_idx, which leads with
-- user_id: a user has few enough rows to sort them. Declared on the partitioned parent, each month gets its own copy.
--
-- On the parent, CREATE INDEX cannot be CONCURRENTLY and holds off writers of each partition while it builds. On a
-- large audit log, build each month's copy beforehand with CREATE INDEX CONCURRENTLY under the same definition (see
-- docs/operations.md): this migration then attaches them instead of building.
create index if not exists entitlement_audit_time_idx on entitlement_audit (occurred_at, audit_id);
create index if not exists entitlement_audit_sku_time_idx on entitlement_audit (stock_keeping_unit, occurred_at, audit_id);
create index if not exists entitlement_audit_caller_time_idx on entitlement_audit (caller, occurred_at, audit_id);
