-- The operator's requeue: FAILED reservations (one, or every one when p_reservation_id is null) PENDING again, due now
-- (never before execute_at), with a fresh attempt budget and a REQUEUE audit row. A FAILED reservation was never
-- granted (the grant and DONE commit together), and point_execute refuses a second ledger row regardless.
create or replace function point_requeue(p_reservation_id uuid)
returns table (reservation_id uuid, user_id text, point_amount bigint, previous_attempts int, last_error text)
language plpgsql volatile as $$
#variable_conflict use_column
begin
  return query
  with requeued as (
    update point_reservations r
    set status = 'PENDING', attempt_count = 0, due_at = greatest(r.execute_at, now()), locked_by = null,
        locked_at = null, updated_at = now()
    from (select p.reservation_id, p.attempt_count from point_reservations p
          where p.status = 'FAILED' and (p_reservation_id is null or p.reservation_id = p_reservation_id)
          for update) old
    where r.reservation_id = old.reservation_id
    returning r.reservation_id, r.user_id, r.point_amount, old.attempt_count as previous_attempts, r.last_error
  ), audit as (
    insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, caller, detail)
    select gen_random_uuid(), now(), reservation_id, user_id, 'REQUEUE', 'operator',
           jsonb_build_object('previous_attempts', previous_attempts, 'last_error', last_error)
    from requeued
  )
  select * from requeued order by reservation_id;
end $$;
