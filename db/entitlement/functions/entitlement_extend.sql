-- The previous release's extension, kept with its exact signature and results so that its replicas keep serving
-- beside this release's during a rolling upgrade: extend_entitlement does the work, and its facts become the reply that
-- release expects (entitlement_previous_reply, from the replies it passes); a record either release stored is
-- replayed. The release after drops it.
create or replace function entitlement_extend(
  p_user_id text,
  p_sku text,
  p_reason text,
  p_purchase_id text,
  p_expires_at timestamptz,          -- the later expiry
  p_now timestamptz,
  p_trace_id text,
  p_traceparent text,
  p_event_type text,
  p_payload jsonb,
  p_detail jsonb,
  p_applied jsonb,                   -- {code, body}: the service's reply of the extension
  p_refused jsonb,                   -- {not_active, no_expiry, not_later}: each a {code, body}; in not_later's
                                     -- message, {expires_at} stands for the current expiry
  p_caller text,
  p_idem_key text,
  p_lock_key bigint,
  p_request_hash text,
  p_record_expires_at timestamptz,
  p_lock_timeout_ms int
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_expires_at timestamptz)
language sql volatile as $$
  select r.outcome, r.stored_hash, r.reply_code,
         coalesce(r.reply_body, entitlement_previous_reply(p_applied, p_refused, r.reply_facts)), r.reply_expires_at
  from extend_entitlement(p_user_id, p_sku, p_reason, p_purchase_id, p_expires_at, p_now, p_trace_id,
                          p_traceparent, p_event_type, p_payload, p_detail,
                          row(p_caller, p_idem_key, p_lock_key, p_request_hash, p_record_expires_at,
                              p_lock_timeout_ms, null)::idempotency_call) r
$$;
