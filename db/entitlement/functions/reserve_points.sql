-- A reservation under its Idempotency-Key, one statement: 'stored' (the key's live record, nothing done), else a
-- PENDING reservation with its audit row ('applied'; the facts: the reservation's fields), unless it would take the
-- user's balance past 2^53 - 1, the largest integer a JSON number carries exactly ('state_conflict'; the facts: the
-- balance, as text, every digit of it). The service makes the reply from the facts (features/points/replies.ts).
create or replace function reserve_points(
  p_reservation_id uuid,
  p_user_id text,
  p_point_amount bigint,
  p_execute_at timestamptz,
  p_reason text,
  p_now timestamptz,
  p_trace_id text,
  p_idem idempotency_call
) returns setof command_outcome language plpgsql volatile as $$
declare
  v_out command_outcome;
  v_balance bigint;
  v_row point_reservations;
begin
  v_out := idempotency_stored(p_idem);
  if v_out.outcome is not null then
    return next v_out;
    return;
  end if;
  select coalesce((select b.balance from point_balances b where b.user_id = p_user_id), 0) into v_balance;
  if v_balance + p_point_amount > 9007199254740991 then
    return next idempotency_keep(p_idem, 'state_conflict', 409,
      jsonb_build_object('kind', 'balance_limit', 'balance', v_balance::text));
    return;
  end if;
  insert into point_reservations
    (reservation_id, user_id, point_amount, execute_at, reason, status, due_at, trace_id, created_by, created_at,
     updated_at)
  values (p_reservation_id, p_user_id, p_point_amount, p_execute_at, p_reason, 'PENDING', p_execute_at, p_trace_id,
          nullif(p_idem.caller, ''), p_now, p_now)
  returning * into v_row;
  return next point_recorded(p_idem, 'RESERVE', v_row, p_now, p_trace_id,
    jsonb_build_object('point_amount', p_point_amount, 'execute_at', p_execute_at), 201, 'reserved');
end $$;
