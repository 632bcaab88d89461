-- A cancel under its Idempotency-Key, one statement: 'stored', 'not_found' (an unknown id: nothing remembered, the
-- caller may have mistyped it), else a PENDING reservation CANCELLED with its audit row ('applied'; the facts: the
-- cancelled reservation's fields), or a refusal ('state_conflict'; the facts: the reservation's status). The row
-- lock makes a cancel exclusive with the scheduler's claim: whichever comes first wins.
create or replace function cancel_point_reservation(
  p_reservation_id uuid,
  p_now timestamptz,
  p_trace_id text,
  p_idem idempotency_call
) returns setof command_outcome language plpgsql volatile as $$
declare
  v_out command_outcome;
  v_row point_reservations;
begin
  v_out := idempotency_stored(p_idem);
  if v_out.outcome is not null then
    return next v_out;
    return;
  end if;
  update point_reservations set status = 'CANCELLED', updated_at = p_now
  where reservation_id = p_reservation_id and status = 'PENDING'
  returning * into v_row;
  if found then
    return next point_recorded(p_idem, 'CANCEL', v_row, p_now, p_trace_id, null, 200, 'cancelled');
    return;
  end if;
  select * into v_row from point_reservations where reservation_id = p_reservation_id;
  if not found then
    return next row('not_found', null, null, null, null, null)::command_outcome;
    return;
  end if;
  return next idempotency_keep(p_idem, 'state_conflict', 409,
    jsonb_build_object('kind', 'not_pending', 'status', v_row.status));
end $$;
