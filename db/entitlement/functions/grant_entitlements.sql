-- A grant of one item or of a bundle's items under its Idempotency-Key, one statement (entitlement_status_change):
-- 'stored', 'past', else every item not ACTIVE granted and the facts remembered ('applied'), or {kind: unchanged}
-- when the one item of a grant that is not a bundle was already ACTIVE ('state_conflict'; a bundle is never refused).
create or replace function grant_entitlements(
  p_user_id text,
  p_skus text[],                     -- the items in the request's order
  p_bundle boolean,                  -- a bundle's grant: never refused
  p_reason text,
  p_purchase_id text,
  p_expires_at timestamptz,          -- the items' expiry, or null
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
    'GRANT', p_user_id, p_skus, p_bundle, p_reason, p_purchase_id, p_expires_at,
    p_now, p_trace_id, p_traceparent, p_event_type, p_payload, p_detail, p_idem);
end $$;
