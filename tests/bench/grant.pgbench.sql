-- The write set of one API grant (src/entitlement/features/entitlements/service.ts), as pgbench runs it: the same statements in
-- the same order in one transaction, on fresh keys. Outbox payloads are valid events, so the relay and the consumer do
-- the same background work as for the API's grants. No colon may appear in a literal: in prepared mode pgbench turns
-- every colon-prefixed word into a parameter.
\set r random(1, 9000000000000000000)
begin;
select set_config('statement_timeout', '5000', true);
select pg_advisory_xact_lock(:r);
select request_hash, response_code, response_body, expires_at from entitlement.idempotency_keys
  where caller = '' and idem_key = 'pgb-k-' || :r::text and expires_at > now();
insert into entitlement.entitlements as e
    (user_id, stock_keeping_unit, status, granted_at, revoked_at, source, source_id, version, updated_at)
  values ('pgb-u-' || :r::text, 'pgb-sku', 'ACTIVE', now(), null, 'bench', 'pgb-p-' || :r::text, 0, now())
  on conflict (user_id, stock_keeping_unit) do update set
    status = excluded.status, granted_at = excluded.granted_at, revoked_at = null, source = excluded.source,
    source_id = excluded.source_id, version = e.version + 1, updated_at = excluded.updated_at
  where e.status <> 'ACTIVE'
  returning user_id, stock_keeping_unit, status, version::float8 as version, updated_at;
insert into entitlement.entitlement_audit
    (audit_id, occurred_at, user_id, stock_keeping_unit, action, source, source_id, request_id, caller, detail,
     trace_id)
  values (gen_random_uuid(), now(), 'pgb-u-' || :r::text, 'pgb-sku', 'GRANT', 'bench', 'pgb-p-' || :r::text, 'pgb-k-' || :r::text,
    'bench', jsonb_build_object('user_id', 'pgb-u-' || :r::text, 'stock_keeping_unit', 'pgb-sku', 'reason', 'bench',
    'purchase_id', 'pgb-p-' || :r::text), md5(:r::text));
insert into entitlement.outbox_events (event_id, event_type, aggregate_key, payload, status, attempt_count, created_at)
  select id, 'EntitlementGranted', 'pgb-u-' || :r::text || chr(58) || 'pgb-sku',
    jsonb_build_object('event_id', id, 'event_type', 'EntitlementGranted',
      'occurred_at', (to_json(now() at time zone 'utc') #>> '{}') || 'Z', 'user_id', 'pgb-u-' || :r::text,
      'stock_keeping_unit', 'pgb-sku', 'source', 'bench', 'source_id', 'pgb-p-' || :r::text, 'version', 0,
      'trace_id', md5(:r::text)),
    'PENDING', 0, now()
  from (select gen_random_uuid() as id) g;
insert into entitlement.idempotency_keys (caller, idem_key, request_hash, response_code, response_body, expires_at)
  values ('', 'pgb-k-' || :r::text, md5(:r::text) || md5(:r::text), 200,
    jsonb_build_object('user_id', 'pgb-u-' || :r::text, 'stock_keeping_unit', 'pgb-sku', 'status', 'ACTIVE', 'version', 0,
      'updated_at', now()), now() + interval '24 hours')
  on conflict (caller, idem_key) do update set
    request_hash = excluded.request_hash, response_code = excluded.response_code,
    response_body = excluded.response_body, expires_at = excluded.expires_at
  where idempotency_keys.expires_at <= now();
commit;
