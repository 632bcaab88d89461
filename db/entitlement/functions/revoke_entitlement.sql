-- A revoke under its Idempotency-Key, one statement, as grant_entitlements: 'stored', else the item revoked unless
-- REVOKED ('applied', the facts of entitlement_facts) or left as it is ('state_conflict', {kind: unchanged}). The row
-- keeps its granted_at; a pair never granted becomes a REVOKED v0 row.
create or replace function revoke_entitlement(
  p_user_id text,
  p_sku text,
  p_reason text,
  p_purchase_id text,
  p_now timestamptz,
  p_trace_id text,
  p_traceparent text,
  p_event_type text,
  p_payload jsonb,
  p_detail jsonb,
  p_caller text,
  p_idem_key text,
  p_lock_key bigint,
  p_request_hash text,
  p_record_expires_at timestamptz,
  p_lock_timeout_ms int,
  p_key_scope text default null      -- whose key space p_idem_key lives in, when not p_caller's (a bulk file's keys)
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_facts jsonb,
                 reply_expires_at timestamptz)
language plpgsql volatile as $$
declare
  v_changed jsonb;
begin
  return query select 'stored', o.request_hash, o.response_code, o.response_body, o.response_facts, o.expires_at
               from idempotency_lookup(coalesce(p_key_scope, p_caller), p_idem_key, p_lock_key, p_lock_timeout_ms) o;
  if found then
    return;
  end if;
  with c as (
    insert into entitlements as e
      (user_id, stock_keeping_unit, status, granted_at, revoked_at, source, source_id, version, updated_at)
    values (p_user_id, p_sku, 'REVOKED', null, p_now, p_reason, p_purchase_id, 0, p_now)
    on conflict (user_id, stock_keeping_unit) do update set
      status = excluded.status, granted_at = e.granted_at, revoked_at = excluded.revoked_at,
      source = excluded.source, source_id = excluded.source_id, version = e.version + 1,
      updated_at = excluded.updated_at, expires_at = null
    where e.status <> 'REVOKED'
    returning e.stock_keeping_unit, e.version, e.source, e.source_id
  )
  select coalesce(jsonb_agg(to_jsonb(c)), '[]') into v_changed from c;
  perform entitlement_record('REVOKE', p_user_id, v_changed, p_now, p_trace_id, p_traceparent, p_event_type,
                             p_payload, p_detail, p_caller, p_idem_key, null);
  return query select * from idempotency_keep(
    case when v_changed = '[]' then 'state_conflict' else 'applied' end,
    case when v_changed = '[]' then 409 else 200 end,
    case when v_changed = '[]' then '{"kind": "unchanged"}'::jsonb
         else entitlement_facts(p_user_id, array[p_sku], v_changed) end,
    coalesce(p_key_scope, p_caller), p_idem_key, p_request_hash, p_record_expires_at);
end $$;
