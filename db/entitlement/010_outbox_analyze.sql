-- The relay refreshes outbox_events' planner statistics after a slow claim (outbox/statistics.ts), but ANALYZE is the
-- table owner's right (before PostgreSQL 17's MAINTAIN): run as the DML-only runtime role of ADR-23, it was skipped
-- with a warning and the claims stayed slow until autoanalyze. This function runs it as its owner, the role that
-- migrates, for the runtime group only. SECURITY DEFINER with a fixed body and search_path: it can analyze that one
-- table and do nothing else, and the table has no expression index that would run code during the analyze.
create function analyze_outbox_events() returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
  analyze entitlement.outbox_events;
end
$$;
revoke execute on function analyze_outbox_events() from public;
grant execute on function analyze_outbox_events() to entitlement_runtime;
