-- The reply body the previous release expects for a points command's facts (reserve_points, cancel_point_reservation),
-- made here for its wrappers only (point_reserve, point_cancel): this release's replies are made by the service. The
-- release after drops it with them.
create or replace function point_previous_reply(p_facts jsonb) returns jsonb language sql stable as $$
  select case p_facts ->> 'kind'
    when 'reserved' then point_reservation_reply(
      jsonb_populate_record(null::point_reservations, p_facts -> 'reservation'))
    when 'cancelled' then point_reservation_reply(
      jsonb_populate_record(null::point_reservations,
                            (p_facts -> 'reservation') - 'executed_at' - 'transaction_id' - 'last_error'))
    when 'balance_limit' then jsonb_build_object('code', 'POINTS_BALANCE_LIMIT', 'message',
      'the balance may not exceed 9007199254740991 points; it is ' || (p_facts ->> 'balance'))
    when 'not_pending' then jsonb_build_object('code', 'RESERVATION_STATE_CONFLICT', 'message',
      'reservation is ' || (p_facts ->> 'status') || '; only a PENDING reservation can be cancelled')
  end
$$;
