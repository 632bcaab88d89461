-- The scheduler's claim of due reservations, oldest due first: PENDING ones (due_at is execute_at or a retry time)
-- and PROCESSING ones whose lease (due_at) ran out. execute_at <= p_now is checked again so nothing ever runs early.
-- A lease-expired row that already used every attempt becomes FAILED here, with its audit row, instead of being
-- claimed again; it is returned with status FAILED. The expiry claim (work/expiry/) makes the same assignments from
-- TypeScript: it writes no audit row, and only functions write those. plpgsql, so that the statement's plan is kept
-- for the session (see entitlement_reply).
create or replace function point_claim(
  p_now timestamptz,
  p_lease_until timestamptz,
  p_locked_by text,
  p_limit int,
  p_max_attempts int
) returns table (reservation_id uuid, user_id text, point_amount bigint, execute_at timestamptz, reason text,
                 trace_id text, attempt_count int, status text)
language plpgsql volatile as $$
#variable_conflict use_column
begin
  return query
  with due as materialized (
    select reservation_id, status = 'PROCESSING' and attempt_count >= p_max_attempts as exhausted
    from point_reservations
    where status in ('PENDING', 'PROCESSING') and due_at <= p_now and execute_at <= p_now
    order by due_at limit p_limit
    for update skip locked
  ), claimed as (
    update point_reservations r
    set status = case when due.exhausted then 'FAILED' else 'PROCESSING' end,
        attempt_count = case when due.exhausted then r.attempt_count else r.attempt_count + 1 end,
        locked_by = case when due.exhausted then null else p_locked_by end,
        locked_at = case when due.exhausted then null else p_now end,
        due_at = case when due.exhausted then r.due_at else p_lease_until end,
        last_error = case when due.exhausted
          then 'lease expired on attempt ' || r.attempt_count || ': the scheduler stopped before finalizing'
          else r.last_error end,
        updated_at = p_now
    from due
    where r.reservation_id = due.reservation_id
    returning r.reservation_id, r.user_id, r.point_amount, r.execute_at, r.reason, r.trace_id, r.attempt_count,
              r.status, r.last_error
  ), audit as (
    insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, detail)
    select gen_random_uuid(), p_now, reservation_id, user_id, 'FAIL', jsonb_build_object('last_error', last_error)
    from claimed where status = 'FAILED'
  )
  select reservation_id, user_id, point_amount, execute_at, reason, trace_id, attempt_count, status
  from claimed order by execute_at, reservation_id;
end $$;
