-- A cancel under its Idempotency-Key, one statement: 'stored', 'not_found' (an unknown id: nothing remembered, the
-- caller may have mistyped it), else a PENDING reservation CANCELLED with its audit row ('applied'), or a refusal
-- ('state_conflict', p_refused remembered; in its message {status} stands for the reservation's status). The row
-- lock makes a cancel exclusive with the scheduler's claim: whichever comes first wins.
create or replace function point_cancel(
  p_reservation_id uuid,
  p_now timestamptz,
  p_trace_id text,
  p_applied jsonb,                   -- {code, body}: the service's reply of the cancel, completed with the fields
                                     -- only the row knows (user_id, point_amount, execute_at, reason, created_at)
  p_refused jsonb,                   -- {code, body}: its reply when the reservation is not PENDING
  p_caller text,
  p_idem_key text,
  p_lock_key bigint,
  p_request_hash text,
  p_record_expires_at timestamptz,
  p_lock_timeout_ms int
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_expires_at timestamptz)
language plpgsql volatile as $$
declare
  v_row point_reservations;
begin
  return query select 'stored', o.request_hash, o.response_code, o.response_body, o.expires_at
               from idempotency_open(p_caller, p_idem_key, p_lock_key, p_lock_timeout_ms) o;
  if found then
    return;
  end if;
  update point_reservations set status = 'CANCELLED', updated_at = p_now
  where reservation_id = p_reservation_id and status = 'PENDING'
  returning * into v_row;
  if found then
    insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, caller, trace_id)
    values (gen_random_uuid(), p_now, v_row.reservation_id, v_row.user_id, 'CANCEL', nullif(p_caller, ''), p_trace_id);
    return query select * from idempotency_answer('applied',
      jsonb_set(p_applied, '{body}', (p_applied -> 'body') || jsonb_build_object(
        'user_id', v_row.user_id, 'point_amount', v_row.point_amount, 'execute_at', api_instant(v_row.execute_at),
        'reason', v_row.reason, 'created_at', api_instant(v_row.created_at))),
      p_caller, p_idem_key, p_request_hash, p_record_expires_at);
    return;
  end if;
  select * into v_row from point_reservations where reservation_id = p_reservation_id;
  if not found then
    return query select 'not_found', null::text, null::int, null::jsonb, null::timestamptz;
    return;
  end if;
  return query select * from idempotency_answer('state_conflict',
    jsonb_set(p_refused, '{body,message}', to_jsonb(replace(p_refused #>> '{body,message}', '{status}', v_row.status))),
    p_caller, p_idem_key, p_request_hash, p_record_expires_at);
end $$;
