-- A reservation under its Idempotency-Key, one statement: 'stored' (the key's live record, nothing done), else a
-- PENDING reservation with its audit row ('applied', p_applied remembered as it is: the service knows every field),
-- unless it would take the user's balance past 2^53 - 1, the largest integer a JSON number carries exactly
-- ('state_conflict', p_refused remembered; in its message {balance} stands for the user's balance).
create or replace function point_reserve(
  p_reservation_id uuid,
  p_user_id text,
  p_point_amount bigint,
  p_execute_at timestamptz,
  p_reason text,
  p_now timestamptz,
  p_trace_id text,
  p_applied jsonb,                   -- {code, body}: the service's reply of the reservation
  p_refused jsonb,                   -- {code, body}: its reply when the balance would pass the limit
  p_caller text,
  p_idem_key text,
  p_lock_key bigint,
  p_request_hash text,
  p_record_expires_at timestamptz,
  p_lock_timeout_ms int
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_expires_at timestamptz)
language plpgsql volatile as $$
declare
  v_balance bigint;
begin
  return query select 'stored', o.request_hash, o.response_code, o.response_body, o.expires_at
               from idempotency_open(p_caller, p_idem_key, p_lock_key, p_lock_timeout_ms) o;
  if found then
    return;
  end if;
  select coalesce((select b.balance from point_balances b where b.user_id = p_user_id), 0) into v_balance;
  if v_balance + p_point_amount > 9007199254740991 then
    return query select * from idempotency_answer('state_conflict',
      jsonb_set(p_refused, '{body,message}',
                to_jsonb(replace(p_refused #>> '{body,message}', '{balance}', v_balance::text))),
      p_caller, p_idem_key, p_request_hash, p_record_expires_at);
    return;
  end if;
  insert into point_reservations
    (reservation_id, user_id, point_amount, execute_at, reason, status, due_at, trace_id, created_by, created_at,
     updated_at)
  values (p_reservation_id, p_user_id, p_point_amount, p_execute_at, p_reason, 'PENDING', p_execute_at, p_trace_id,
          nullif(p_caller, ''), p_now, p_now);
  insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, caller, trace_id, detail)
  values (gen_random_uuid(), p_now, p_reservation_id, p_user_id, 'RESERVE', nullif(p_caller, ''), p_trace_id,
          jsonb_build_object('point_amount', p_point_amount, 'execute_at', p_execute_at));
  return query select * from idempotency_answer('applied', p_applied, p_caller, p_idem_key, p_request_hash,
                                                p_record_expires_at);
end $$;
