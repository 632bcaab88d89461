-- The console's undo of an extension under its Idempotency-Key, one statement, as extend_entitlement: 'stored',
-- 'past', else the item still at the version the extension left (ACTIVE, its expiry later than p_expires_at) gets
-- back the expiry the extension replaced ('applied': version + 1, audit EXTEND, event EntitlementExtended with the
-- earlier expiry, the expiry row rescheduled to it; the facts of entitlement_facts), or nothing changes and the
-- refusal that fits the row is remembered ('state_conflict'; the facts: changed_since or not_earlier). Its own
-- function, beside extend_entitlement: an extension only ever moves an expiry later, and only this undo moves one
-- back, and only at the version it is told.
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
  p_caller text,
  p_idem_key text,
  p_lock_key bigint,
  p_request_hash text,
  p_record_expires_at timestamptz,
  p_lock_timeout_ms int
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_facts jsonb,
                 reply_expires_at timestamptz)
language plpgsql volatile as $$
declare
  v_changed jsonb;
  v_facts jsonb;
begin
  return query select 'stored', o.request_hash, o.response_code, o.response_body, o.response_facts, o.expires_at
               from idempotency_lookup(p_caller, p_idem_key, p_lock_key, p_lock_timeout_ms) o;
  if found then
    return;
  end if;
  if p_expires_at <= p_now then
    return query select 'past', null::text, null::int, null::jsonb, null::jsonb, null::timestamptz;
    return;
  end if;
  v_changed := entitlement_set_expiry(p_user_id, p_sku, p_reason, p_purchase_id, p_expires_at, p_now, p_version);
  if v_changed <> '[]' then
    perform entitlement_record('EXTEND', p_user_id, v_changed, p_now, p_trace_id, p_traceparent, p_event_type,
                               p_payload, p_detail, p_caller, p_idem_key, p_expires_at);
    return query select * from idempotency_keep('applied', 200, entitlement_facts(p_user_id, array[p_sku], v_changed),
                                                p_caller, p_idem_key, p_request_hash, p_record_expires_at);
    return;
  end if;
  select case when e.status = 'ACTIVE' and e.version = p_version then '{"kind": "not_earlier"}'::jsonb
              else '{"kind": "changed_since"}'::jsonb end
  into v_facts
  from (select) one
  left join entitlements e on e.user_id = p_user_id and e.stock_keeping_unit = p_sku;
  return query select * from idempotency_keep('state_conflict', 409, v_facts, p_caller, p_idem_key, p_request_hash,
                                              p_record_expires_at);
end $$;
