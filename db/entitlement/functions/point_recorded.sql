-- The applied end of a points command: the reservation's audit row (p_action, with p_detail) and the facts remembered
-- under the key ({kind: p_kind, reservation: its fields}), returned as the command's outcome (a value).
create or replace function point_recorded(
  p_idem idempotency_call,
  p_action text,                     -- RESERVE or CANCEL
  p_row point_reservations,          -- the reservation as the command left it
  p_now timestamptz,
  p_trace_id text,
  p_detail jsonb,
  p_code int,
  p_kind text
) returns command_outcome language plpgsql volatile as $$
begin
  insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, caller, trace_id, detail)
  values (gen_random_uuid(), p_now, p_row.reservation_id, p_row.user_id, p_action, nullif(p_idem.caller, ''),
          p_trace_id, p_detail);
  return idempotency_keep(p_idem, 'applied', p_code,
    jsonb_build_object('kind', p_kind, 'reservation', point_reservation_facts(p_row)));
end $$;
