-- A reservation as the previous release answered it; kept for point_previous_reply (its wrappers' replies) only, and
-- dropped with them by the release after. This release's replies are made by the service.
create or replace function point_reservation_reply(r point_reservations) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'reservation_id', r.reservation_id, 'user_id', r.user_id, 'point_amount', r.point_amount,
    'execute_at', api_instant(r.execute_at), 'reason', r.reason, 'status', r.status,
    'created_at', api_instant(r.created_at), 'updated_at', api_instant(r.updated_at))
  || case when r.executed_at is null then '{}' else jsonb_build_object('executed_at', api_instant(r.executed_at)) end
  || case when r.transaction_id is null then '{}' else jsonb_build_object('transaction_id', r.transaction_id) end
  || case when r.status = 'FAILED' and r.last_error is not null then jsonb_build_object('last_error', r.last_error)
          else '{}' end
$$;
