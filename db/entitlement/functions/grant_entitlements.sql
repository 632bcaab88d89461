-- A grant of one item or of a bundle's items under its Idempotency-Key, one statement: the key's lock and live record
-- ('stored': its hash and facts or reply, nothing done), an expiry not after p_now ('past': nothing done), else every
-- item not ACTIVE granted with what commits with it (entitlement_record) and the facts remembered: each item's
-- version, updated_at and changed ('applied', entitlement_facts), or, when the one item of a grant that is not a
-- bundle was already ACTIVE, {kind: unchanged} ('state_conflict'; a bundle, whose reply lists every item, is never
-- refused). The service makes the reply of the facts.
create or replace function grant_entitlements(
  p_user_id text,
  p_skus text[],                     -- the items in the request's order
  p_bundle boolean,                  -- a bundle's grant: never refused
  p_reason text,                     -- the entitlement's new source
  p_purchase_id text,                -- its new source_id
  p_expires_at timestamptz,          -- the items' expiry, or null
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
  p_lock_timeout_ms int,
  p_key_scope text default null      -- whose key space p_idem_key lives in, when not p_caller's (a bulk file's keys)
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_facts jsonb,
                 reply_expires_at timestamptz)
language plpgsql volatile as $$
declare
  v_changed jsonb;
begin
  return query select 'stored', o.request_hash, o.response_code, o.response_body, o.response_facts, o.expires_at
               from idempotency_lookup(coalesce(p_key_scope, p_caller), p_idem_key, p_lock_key, p_lock_timeout_ms) o;
  if found then
    return;
  end if;
  if p_expires_at is not null and p_expires_at <= p_now then
    return query select 'past', null::text, null::int, null::jsonb, null::jsonb, null::timestamptz;
    return;
  end if;
  -- Unless ACTIVE: a new row is v0, a REVOKED row goes to v+1. Rows are inserted and locked in SKU order, so two
  -- bundles of one user that share items wait for each other instead of deadlocking. An ACTIVE row stays locked
  -- though unchanged (ON CONFLICT locks it before its WHERE), so the bundle's facts read it as it stays.
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
  if v_changed = '[]' and not p_bundle then
    return query select * from idempotency_keep('state_conflict', 409, '{"kind": "unchanged"}',
      coalesce(p_key_scope, p_caller), p_idem_key, p_request_hash, p_record_expires_at);
    return;
  end if;
  return query select * from idempotency_keep('applied', 200, entitlement_facts(p_user_id, p_skus, v_changed),
    coalesce(p_key_scope, p_caller), p_idem_key, p_request_hash, p_record_expires_at);
end $$;
