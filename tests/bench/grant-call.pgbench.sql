-- The API's grant as pgbench runs it: the one call of entitlement_status_change (db/entitlement/functions/) the service
-- sends per grant, on fresh keys, with a valid event and the service's replies (tests/bench/grant-cpu.ts, api-alone.ts). The
-- function resolves its tables through search_path, so the connection sets it to entitlement (the callers add it to
-- the URL). No colon may appear in a literal (see grant.pgbench.sql).
\set r random(1, 9000000000000000000)
select c.* from (select 'pgc-u-' || :r::text as u, 'pgc-p-' || :r::text as p,
                        (to_json(now() at time zone 'utc') #>> '{}') || 'Z' as at) g,
  lateral entitlement.entitlement_status_change(
    p_action => 'GRANT', p_user_id => g.u, p_skus => array['pgc-sku'], p_bundle => false, p_reason => 'bench',
    p_purchase_id => g.p,
    p_expires_at => null, p_now => now(), p_trace_id => md5(:r::text), p_traceparent => null,
    p_event_type => 'EntitlementGranted',
    p_payload => jsonb_build_object('event_type', 'EntitlementGranted', 'occurred_at', g.at, 'user_id', g.u,
      'source', 'bench', 'trace_id', md5(:r::text)),
    p_detail => jsonb_build_object('user_id', g.u, 'stock_keeping_unit', 'pgc-sku', 'reason', 'bench',
      'purchase_id', g.p),
    p_idem => row('', 'pgc-k-' || :r::text, :r, md5(:r::text) || md5(:r::text), now() + interval '24 hours', 5000,
                  null)::entitlement.idempotency_call) c;
