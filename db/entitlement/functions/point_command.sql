-- The previous release's entry point of the points commands, kept with its exact signature and results so that its
-- replicas keep serving beside this release's during a rolling upgrade: RESERVE and CANCEL are handed to their own
-- functions with the replies the previous release made here. Nothing of this release calls it; the release after
-- drops it, with entitlement_change and point_reservation_reply.
create or replace function point_command(
  p_action text, p_reservation_id uuid, p_user_id text, p_point_amount bigint, p_execute_at timestamptz,
  p_reason text, p_now timestamptz, p_trace_id text, p_caller text, p_idem_key text, p_lock_key bigint,
  p_request_hash text, p_record_expires_at timestamptz, p_lock_timeout_ms int
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_expires_at timestamptz)
language plpgsql volatile as $$
declare
  v_new point_reservations;
begin
  if p_action = 'RESERVE' then
    v_new := jsonb_populate_record(null::point_reservations, jsonb_build_object(
      'reservation_id', p_reservation_id, 'user_id', p_user_id, 'point_amount', p_point_amount,
      'execute_at', p_execute_at, 'reason', p_reason, 'status', 'PENDING', 'created_at', p_now, 'updated_at', p_now));
    return query select * from point_reserve(p_reservation_id, p_user_id, p_point_amount, p_execute_at, p_reason,
      p_now, p_trace_id, jsonb_build_object('code', 201, 'body', point_reservation_reply(v_new)),
      '{"code": 409, "body": {"code": "POINTS_BALANCE_LIMIT", "message":
        "the balance may not exceed 9007199254740991 points; it is {balance}"}}',
      p_caller, p_idem_key, p_lock_key, p_request_hash, p_record_expires_at, p_lock_timeout_ms);
  elsif p_action = 'CANCEL' then
    return query select * from point_cancel(p_reservation_id, p_now, p_trace_id,
      jsonb_build_object('code', 200, 'body', jsonb_build_object('reservation_id', p_reservation_id,
        'status', 'CANCELLED', 'updated_at', api_instant(p_now))),
      '{"code": 409, "body": {"code": "RESERVATION_STATE_CONFLICT", "message":
        "reservation is {status}; only a PENDING reservation can be cancelled"}}',
      p_caller, p_idem_key, p_lock_key, p_request_hash, p_record_expires_at, p_lock_timeout_ms);
  else
    raise exception 'point_command: unknown action %', p_action;
  end if;
end $$;
