-- A reservation's fields as a command's facts remember them (reserve_points, cancel_point_reservation): instants as
-- JSON strings with their offset, which the service reads back as Dates.
create or replace function point_reservation_facts(r point_reservations) returns jsonb language sql immutable as $$
  select jsonb_build_object(
    'reservation_id', r.reservation_id, 'user_id', r.user_id, 'point_amount', r.point_amount,
    'execute_at', r.execute_at, 'reason', r.reason, 'status', r.status, 'created_at', r.created_at,
    'updated_at', r.updated_at, 'executed_at', r.executed_at, 'transaction_id', r.transaction_id,
    'last_error', r.last_error)
$$;
