-- The previous release's reservation, kept with its exact signature and results so that its replicas keep serving
-- beside this release's during a rolling upgrade: reserve_points does the work, and its facts become the reply that
-- release expects (point_previous_reply); a record either release stored is replayed. p_applied and p_refused, the
-- replies that release makes, are what the facts make and are not read. The release after drops it.
create or replace function point_reserve(
  p_reservation_id uuid,
  p_user_id text,
  p_point_amount bigint,
  p_execute_at timestamptz,
  p_reason text,
  p_now timestamptz,
  p_trace_id text,
  p_applied jsonb,
  p_refused jsonb,
  p_caller text,
  p_idem_key text,
  p_lock_key bigint,
  p_request_hash text,
  p_record_expires_at timestamptz,
  p_lock_timeout_ms int
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_expires_at timestamptz)
language sql volatile as $$
  select r.outcome, r.stored_hash, r.reply_code, coalesce(r.reply_body, point_previous_reply(r.reply_facts)),
         r.reply_expires_at
  from reserve_points(p_reservation_id, p_user_id, p_point_amount, p_execute_at, p_reason, p_now, p_trace_id,
                      row(p_caller, p_idem_key, p_lock_key, p_request_hash, p_record_expires_at, p_lock_timeout_ms,
                          null)::idempotency_call) r
$$;
