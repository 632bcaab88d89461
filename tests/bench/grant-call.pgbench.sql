-- The API's grant as pgbench runs it: the one call of entitlement_command (db/entitlement/009) the service sends per
-- grant, on fresh keys, with a valid event (tests/bench/grant-cpu.ts). The function resolves its tables through
-- search_path, so the connection sets it to entitlement (grant-cpu.ts adds it to the URL). No colon may appear in a
-- literal (see grant.pgbench.sql): chr(58) stands for one.
\set r random(1, 9000000000000000000)
select c.* from (select gen_random_uuid() as id, 'pgc-u-' || :r::text as u, 'pgc-p-' || :r::text as p,
                        (to_json(now() at time zone 'utc') #>> '{}') || 'Z' as at) g,
  lateral entitlement.entitlement_command(
    p_action => 'GRANT', p_caller => '', p_idem_key => 'pgc-k-' || :r::text, p_lock_key => :r,
    p_request_hash => md5(:r::text) || md5(:r::text), p_user_id => g.u, p_sku => 'pgc-sku', p_reason => 'bench',
    p_purchase_id => g.p, p_expires_at => null, p_now => now(), p_record_expires_at => now() + interval '24 hours',
    p_lock_timeout_ms => 5000, p_audit_id => gen_random_uuid(),
    p_detail => jsonb_build_object('user_id', g.u, 'stock_keeping_unit', 'pgc-sku', 'reason', 'bench',
      'purchase_id', g.p),
    p_trace_id => md5(:r::text), p_event_id => g.id, p_event_type => 'EntitlementGranted',
    p_aggregate_key => g.u || chr(58) || 'pgc-sku',
    p_payload => jsonb_build_object('event_id', g.id, 'event_type', 'EntitlementGranted', 'occurred_at', g.at,
      'user_id', g.u, 'stock_keeping_unit', 'pgc-sku', 'source', 'bench', 'source_id', g.p, 'version', 0,
      'trace_id', md5(:r::text)),
    p_traceparent => null,
    p_applied => jsonb_build_object('user_id', g.u, 'stock_keeping_unit', 'pgc-sku', 'status', 'ACTIVE', 'version', 0,
      'updated_at', g.at),
    p_conflict => jsonb_build_object('code', 'ENTITLEMENT_STATE_CONFLICT', 'message', 'already ACTIVE')) c;
