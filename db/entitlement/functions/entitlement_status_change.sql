-- A grant (one item or a bundle's items) or a revoke under its Idempotency-Key, the one function the service calls for
-- either: the key's lock and live record ('stored': its hash and facts or reply, nothing done), a grant's expiry not
-- after p_now ('past': nothing done), else every item not already in the action's status moved to it, with what
-- commits with it (entitlement_record), and the facts remembered: each item's version, updated_at and changed
-- ('applied', entitlement_facts), or, when the one item of a change that is not a bundle was already there, {kind:
-- unchanged} ('state_conflict'; a bundle, whose reply lists every item, is never refused). The service makes the reply.
create or replace function entitlement_status_change(
  p_action text,                     -- GRANT (to ACTIVE) or REVOKE (to REVOKED)
  p_user_id text,
  p_skus text[],                     -- the items in the request's order
  p_bundle boolean,
  p_reason text,                     -- the entitlement's new source
  p_purchase_id text,                -- its new source_id
  p_expires_at timestamptz,          -- a grant's expiry, or null; a revoke's is null
  p_now timestamptz,
  p_trace_id text,
  p_traceparent text,
  p_event_type text,
  p_payload jsonb,
  p_detail jsonb,
  p_idem idempotency_call
) returns setof command_outcome language plpgsql volatile as $$
declare
  v_status text := case p_action when 'GRANT' then 'ACTIVE' when 'REVOKE' then 'REVOKED' end;
  v_changed jsonb;
  v_out command_outcome;
begin
  v_out := idempotency_stored(p_idem);
  if v_out.outcome is not null then
    return next v_out;
    return;
  end if;
  if p_expires_at is not null and p_expires_at <= p_now then
    return next row('past', null, null, null, null, null)::command_outcome;
    return;
  end if;
  -- A new row is v0, a row in the other status goes to v+1: a grant sets granted_at and clears revoked_at, a revoke
  -- keeps granted_at (null on a pair never granted) and sets revoked_at; the expiry is the grant's, a revoke's none.
  -- Rows are inserted and locked in SKU order, so two bundles of one user that share items wait for each other
  -- instead of deadlocking. A row already in the status stays locked though unchanged (ON CONFLICT locks it before
  -- its WHERE), so the bundle's facts read it as it stays.
  with c as (
    insert into entitlements as e
      (user_id, stock_keeping_unit, status, granted_at, revoked_at, source, source_id, version, updated_at, expires_at)
    select p_user_id, item.sku, v_status, case when p_action = 'GRANT' then p_now end,
           case when p_action = 'REVOKE' then p_now end, p_reason, p_purchase_id, 0, p_now, p_expires_at
    from unnest(p_skus) as item(sku)
    order by item.sku
    on conflict (user_id, stock_keeping_unit) do update set
      status = excluded.status, granted_at = coalesce(excluded.granted_at, e.granted_at),
      revoked_at = excluded.revoked_at, source = excluded.source, source_id = excluded.source_id,
      version = e.version + 1, updated_at = excluded.updated_at, expires_at = excluded.expires_at
    where e.status <> excluded.status
    returning e.stock_keeping_unit, e.version, e.source, e.source_id, e.updated_at
  )
  select coalesce(jsonb_agg(to_jsonb(c)), '[]') into v_changed from c;
  perform entitlement_record(p_action, p_user_id, v_changed, p_now, p_trace_id, p_traceparent, p_event_type,
                             p_payload, p_detail, p_idem.caller, p_idem.idem_key, p_expires_at);
  if v_changed = '[]' and not p_bundle then
    return next idempotency_keep(p_idem, 'state_conflict', 409, '{"kind": "unchanged"}');
  else
    return next idempotency_keep(p_idem, 'applied', 200, entitlement_facts(p_user_id, p_skus, v_changed));
  end if;
end $$;
