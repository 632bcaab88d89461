-- A cancel under its Idempotency-Key, one statement: 'stored', 'not_found' (an unknown id: nothing remembered, the
-- caller may have mistyped it), else a PENDING reservation CANCELLED with its audit row ('applied'; the facts: the
-- cancelled reservation's fields), or a refusal ('state_conflict'; the facts: the reservation's status). The row
-- lock makes a cancel exclusive with the scheduler's claim: whichever comes first wins.
create or replace function cancel_point_reservation(
  p_reservation_id uuid,
  p_now timestamptz,
  p_trace_id text,
  p_caller text,
  p_idem_key text,
  p_lock_key bigint,
  p_request_hash text,
  p_record_expires_at timestamptz,
  p_lock_timeout_ms int
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_facts jsonb,
                 reply_expires_at timestamptz)
language plpgsql volatile as $$
declare
  v_row point_reservations;
begin
  return query select 'stored', o.request_hash, o.response_code, o.response_body, o.response_facts, o.expires_at
               from idempotency_lookup(p_caller, p_idem_key, p_lock_key, p_lock_timeout_ms) o;
  if found then
    return;
  end if;
  update point_reservations set status = 'CANCELLED', updated_at = p_now
  where reservation_id = p_reservation_id and status = 'PENDING'
  returning * into v_row;
  if found then
    insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, caller, trace_id)
    values (gen_random_uuid(), p_now, v_row.reservation_id, v_row.user_id, 'CANCEL', nullif(p_caller, ''), p_trace_id);
    return query select * from idempotency_keep('applied', 200,
      jsonb_build_object('kind', 'cancelled', 'reservation', point_reservation_facts(v_row)),
      p_caller, p_idem_key, p_request_hash, p_record_expires_at);
    return;
  end if;
  select * into v_row from point_reservations where reservation_id = p_reservation_id;
  if not found then
    return query select 'not_found', null::text, null::int, null::jsonb, null::jsonb, null::timestamptz;
    return;
  end if;
  return query select * from idempotency_keep('state_conflict', 409,
    jsonb_build_object('kind', 'not_pending', 'status', v_row.status),
    p_caller, p_idem_key, p_request_hash, p_record_expires_at);
end $$;
