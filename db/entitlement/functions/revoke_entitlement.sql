-- A revoke under its Idempotency-Key, one statement (entitlement_status_change): 'stored', else the item revoked
-- unless REVOKED ('applied') or left as it is ('state_conflict', {kind: unchanged}). The row keeps its granted_at; a
-- pair never granted becomes a REVOKED v0 row.
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
  p_idem idempotency_call
) returns setof command_outcome language plpgsql volatile as $$
begin
  -- PL/pgSQL, not SQL: a set-returning SQL function that is not inlined is parsed and planned again at every call.
  return query select * from entitlement_status_change(
    'REVOKE', p_user_id, array[p_sku], false, p_reason, p_purchase_id, null,
    p_now, p_trace_id, p_traceparent, p_event_type, p_payload, p_detail, p_idem);
end $$;
