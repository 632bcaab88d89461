-- A failed attempt of a claimed reservation, guarded by the claim: PENDING again, due at p_retry_at (never before
-- execute_at), or FAILED with its audit row when p_retry_at is null. True when the claim still held. plpgsql,
-- so that the statement's plan is kept for the session (see entitlement_reply).
create or replace function point_fail(
  p_reservation_id uuid,
  p_locked_by text,
  p_now timestamptz,
  p_retry_at timestamptz,
  p_last_error text
) returns boolean language plpgsql volatile as $$
declare
  v_changed boolean;
begin
  with failed as (
    update point_reservations
    set status = case when p_retry_at is null then 'FAILED' else 'PENDING' end,
        due_at = greatest(execute_at, coalesce(p_retry_at, due_at)),
        last_error = p_last_error, locked_by = null, locked_at = null, updated_at = p_now
    where reservation_id = p_reservation_id and locked_by = p_locked_by and status = 'PROCESSING'
    returning reservation_id, user_id, status
  ), audit as (
    insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, detail)
    select gen_random_uuid(), p_now, reservation_id, user_id, 'FAIL', jsonb_build_object('last_error', p_last_error)
    from failed where status = 'FAILED'
  )
  select exists (select from failed) into v_changed;
  return v_changed;
end $$;
