-- The previous release's single entry point (one branch per action, replies partly made here), kept with its exact
-- signature and results so that its replicas keep serving beside this release's during a rolling upgrade: each
-- action is handed to its own function with the replies the previous release expected. Nothing of this release calls
-- it; the release after drops it, with point_command and point_reservation_reply.
create or replace function entitlement_change(
  p_action text, p_user_id text, p_skus text[], p_bundle boolean, p_reason text, p_purchase_id text,
  p_expires_at timestamptz, p_now timestamptz, p_trace_id text, p_traceparent text, p_event_type text, p_payload jsonb,
  p_detail jsonb, p_reply jsonb, p_caller text, p_idem_key text, p_lock_key bigint, p_request_hash text,
  p_record_expires_at timestamptz, p_lock_timeout_ms int, p_locked_by text
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_expires_at timestamptz)
language plpgsql volatile as $$
declare
  v_ok jsonb := jsonb_build_object('code', 200, 'body', p_reply);
  v_conflict jsonb := '{"code": 409, "body": {"code": "ENTITLEMENT_STATE_CONFLICT"}}';
begin
  if p_action = 'EXPIRE' then
    return query select entitlement_expire(p_user_id, p_skus[1], p_reason, p_now, p_trace_id, p_traceparent,
                                           p_event_type, p_payload, p_locked_by),
                        null::text, null::int, null::jsonb, null::timestamptz;
  elsif p_action = 'GRANT' then
    if p_bundle then
      select jsonb_build_object('code', 200, 'body', jsonb_build_object('user_id', p_user_id, 'items',
               jsonb_agg(jsonb_build_object('stock_keeping_unit', sku, 'status', 'ACTIVE') order by n)))
      into v_ok from unnest(p_skus) with ordinality as item(sku, n);
    end if;
    return query select * from entitlement_grant(p_user_id, p_skus, p_reason, p_purchase_id, p_expires_at, p_now,
      p_trace_id, p_traceparent, p_event_type, p_payload, p_detail, v_ok,
      jsonb_set(v_conflict, '{body,message}', '"already ACTIVE"'),
      p_caller, p_idem_key, p_lock_key, p_request_hash, p_record_expires_at, p_lock_timeout_ms);
  elsif p_action = 'REVOKE' then
    return query select * from entitlement_revoke(p_user_id, p_skus[1], p_reason, p_purchase_id, p_now, p_trace_id,
      p_traceparent, p_event_type, p_payload, p_detail, v_ok,
      jsonb_set(v_conflict, '{body,message}', '"already REVOKED"'),
      p_caller, p_idem_key, p_lock_key, p_request_hash, p_record_expires_at, p_lock_timeout_ms);
  elsif p_action = 'EXTEND' then
    return query select * from entitlement_extend(p_user_id, p_skus[1], p_reason, p_purchase_id, p_expires_at, p_now,
      p_trace_id, p_traceparent, p_event_type, p_payload, p_detail, v_ok,
      jsonb_build_object(
        'not_active', jsonb_set(v_conflict, '{body,message}', '"not ACTIVE"'),
        'no_expiry', jsonb_set(v_conflict, '{body,message}', '"the entitlement has no expiry to extend"'),
        'not_later', jsonb_set(v_conflict, '{body,message}',
                               '"expires_at must be later than the current one ({expires_at})"')),
      p_caller, p_idem_key, p_lock_key, p_request_hash, p_record_expires_at, p_lock_timeout_ms);
  else
    raise exception 'entitlement_change: unknown action %', p_action;
  end if;
end $$;
