-- The previous release's grant, kept with its exact signature and results so that its replicas keep serving beside
-- this release's during a rolling upgrade: entitlement_status_change does the work (a bundle is a grant whose reply
-- lists items), and its facts become the reply that release expects (entitlement_previous_reply); a record either
-- release stored is replayed. The release after drops it.
create or replace function entitlement_grant(
  p_user_id text,
  p_skus text[],
  p_reason text,
  p_purchase_id text,
  p_expires_at timestamptz,
  p_now timestamptz,
  p_trace_id text,
  p_traceparent text,
  p_event_type text,
  p_payload jsonb,
  p_detail jsonb,
  p_applied jsonb,                   -- {code, body}: that release's reply of the grant, without what the facts hold
  p_refused jsonb,                   -- {code, body}: its reply when the one item is already ACTIVE
  p_caller text,
  p_idem_key text,
  p_lock_key bigint,
  p_request_hash text,
  p_record_expires_at timestamptz,
  p_lock_timeout_ms int,
  p_key_scope text default null
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_expires_at timestamptz)
language sql volatile as $$
  select r.outcome, r.stored_hash, r.reply_code,
         coalesce(r.reply_body, entitlement_previous_reply(p_applied, p_refused, r.reply_facts)), r.reply_expires_at
  from entitlement_status_change('GRANT', p_user_id, p_skus, p_applied #> '{body,items}' is not null, p_reason,
                                 p_purchase_id, p_expires_at, p_now, p_trace_id, p_traceparent, p_event_type,
                                 p_payload, p_detail,
                                 row(p_caller, p_idem_key, p_lock_key, p_request_hash, p_record_expires_at,
                                     p_lock_timeout_ms, p_key_scope)::idempotency_call) r
$$;
