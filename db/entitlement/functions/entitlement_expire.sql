-- The scheduler's expiry of one claimed item, in the scheduler's transaction (no idempotency record): the claimed
-- expiry DONE, guarded by the claim ('lost' when it was lost: nothing else happens), and only if the entitlement is
-- still ACTIVE with an expiry that has passed, its revoke with what commits with it ('applied'); a revoke, re-grant or
-- extension since made the expiry moot ('unchanged'). The expiry row is locked before the entitlement's, as an
-- extension does.
create or replace function entitlement_expire(
  p_user_id text,
  p_sku text,
  p_reason text,                     -- the entitlement's new source ('expiry'); its source_id is kept
  p_now timestamptz,
  p_trace_id text,
  p_traceparent text,
  p_event_type text,
  p_payload jsonb,
  p_locked_by text                   -- the scheduler's claim
) returns text language plpgsql volatile as $$
declare
  v_finalized boolean;
  v_changed jsonb;
begin
  with done as (
    update entitlement_expiries
    set status = 'DONE', executed_at = p_now, updated_at = p_now, locked_by = null, locked_at = null,
        last_error = null
    where user_id = p_user_id and stock_keeping_unit = p_sku and locked_by = p_locked_by and status = 'PROCESSING'
    returning stock_keeping_unit, expires_at
  ), c as (
    update entitlements e
    set status = 'REVOKED', revoked_at = p_now, source = p_reason, version = e.version + 1, updated_at = p_now,
        expires_at = null
    from done
    where e.user_id = p_user_id and e.stock_keeping_unit = done.stock_keeping_unit and e.status = 'ACTIVE'
      and e.expires_at <= p_now
    returning e.stock_keeping_unit, e.version, e.source, coalesce(e.source_id, '') as source_id,
              jsonb_build_object('expires_at', done.expires_at) as detail
  )
  select exists (select from done), coalesce((select jsonb_agg(to_jsonb(c)) from c), '[]')
  into v_finalized, v_changed;
  perform entitlement_record('EXPIRE', p_user_id, v_changed, p_now, p_trace_id, p_traceparent, p_event_type,
                             p_payload, '{}', null, null, null);
  return case when not v_finalized then 'lost' when v_changed <> '[]' then 'applied' else 'unchanged' end;
end $$;
