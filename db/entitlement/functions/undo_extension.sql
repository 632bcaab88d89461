-- The console's undo of an extension under its Idempotency-Key, one statement: extend_entitlement at the version the
-- extension left ('stored', 'past', 'applied' with the earlier expiry back, or 'state_conflict': changed_since or
-- not_earlier).
create or replace function undo_extension(
  p_user_id text,
  p_sku text,
  p_reason text,
  p_purchase_id text,                -- undo:<audit_id> of the extension
  p_expires_at timestamptz,          -- the expiry the extension replaced
  p_version bigint,                  -- the version the extension left: the undo applies only while it is current
  p_now timestamptz,
  p_trace_id text,
  p_traceparent text,
  p_event_type text,
  p_payload jsonb,
  p_detail jsonb,
  p_idem idempotency_call
) returns setof command_outcome language sql volatile as $$
  select * from extend_entitlement(p_user_id, p_sku, p_reason, p_purchase_id, p_expires_at, p_now, p_trace_id,
                                   p_traceparent, p_event_type, p_payload, p_detail, p_idem, p_version)
$$;
