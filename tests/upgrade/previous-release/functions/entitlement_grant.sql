-- A grant of one item or of a bundle's items under its Idempotency-Key, one statement: the key's lock and live record
-- ('stored': its hash and reply, nothing done), an expiry not after p_now ('past': nothing done), else every item
-- not ACTIVE granted with what commits with it (entitlement_record) and the reply remembered: p_applied completed by
-- entitlement_reply ('applied'), or p_refused when the one item was already ACTIVE ('state_conflict'; a bundle, whose
-- reply lists every item, is never refused).
create or replace function entitlement_grant(
  p_user_id text,
  p_skus text[],                     -- the items in the request's order
  p_reason text,                     -- the entitlement's new source
  p_purchase_id text,                -- its new source_id
  p_expires_at timestamptz,          -- the items' expiry, or null
  p_now timestamptz,
  p_trace_id text,
  p_traceparent text,
  p_event_type text,
  p_payload jsonb,
  p_detail jsonb,
  p_applied jsonb,                   -- {code, body}: the service's reply of the grant
  p_refused jsonb,                   -- {code, body}: its reply when the one item is already ACTIVE
  p_caller text,
  p_idem_key text,
  p_lock_key bigint,
  p_request_hash text,
  p_record_expires_at timestamptz,
  p_lock_timeout_ms int
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_expires_at timestamptz)
language plpgsql volatile as $$
declare
  v_changed jsonb;
  v_refused boolean;
begin
  return query select 'stored', o.request_hash, o.response_code, o.response_body, o.expires_at
               from idempotency_open(p_caller, p_idem_key, p_lock_key, p_lock_timeout_ms) o;
  if found then
    return;
  end if;
  if p_expires_at is not null and p_expires_at <= p_now then
    return query select 'past', null::text, null::int, null::jsonb, null::timestamptz;
    return;
  end if;
  -- Unless ACTIVE: a new row is v0, a REVOKED row goes to v+1. Rows are inserted and locked in SKU order, so two
  -- bundles of one user that share items wait for each other instead of deadlocking. An ACTIVE row stays locked
  -- though unchanged (ON CONFLICT locks it before its WHERE), so the bundle's reply reads it as it stays.
  with c as (
    insert into entitlements as e
      (user_id, stock_keeping_unit, status, granted_at, revoked_at, source, source_id, version, updated_at, expires_at)
    select p_user_id, item.sku, 'ACTIVE', p_now, null, p_reason, p_purchase_id, 0, p_now, p_expires_at
    from unnest(p_skus) as item(sku)
    order by item.sku
    on conflict (user_id, stock_keeping_unit) do update set
      status = excluded.status, granted_at = excluded.granted_at, revoked_at = null, source = excluded.source,
      source_id = excluded.source_id, version = e.version + 1, updated_at = excluded.updated_at,
      expires_at = excluded.expires_at
    where e.status <> 'ACTIVE'
    returning e.stock_keeping_unit, e.version, e.source, e.source_id
  )
  select coalesce(jsonb_agg(to_jsonb(c)), '[]') into v_changed from c;
  perform entitlement_record('GRANT', p_user_id, v_changed, p_now, p_trace_id, p_traceparent, p_event_type,
                             p_payload, p_detail, p_caller, p_idem_key, p_expires_at);
  v_refused := v_changed = '[]' and p_applied #> '{body,items}' is null;
  return query select * from idempotency_answer(
    case when v_refused then 'state_conflict' else 'applied' end,
    case when v_refused then p_refused else entitlement_reply(p_applied, p_user_id, v_changed) end,
    p_caller, p_idem_key, p_request_hash, p_record_expires_at);
end $$;
