-- The expiry of one ACTIVE item set to p_expires_at, the write of extend_entitlement, which an extension and the
-- console's undo of one share: with p_version null only a later expiry is set, with a version (undo_extension) only
-- an earlier one and only while the item is at that version. The expiry row is locked before the entitlement's, the
-- scheduler's order (entitlement_expire), so the two never deadlock. Returns the changed item as entitlement_record
-- takes it, with the expiry it replaced (`expires_before`, which the audit detail keeps: the console's undo of an
-- extension restores it), or '[]' when nothing changed (the caller then says why).
create or replace function entitlement_set_expiry(
  p_user_id text,
  p_sku text,
  p_reason text,
  p_purchase_id text,
  p_expires_at timestamptz,
  p_now timestamptz,
  p_version bigint
) returns jsonb language plpgsql volatile as $$
declare
  v_changed jsonb;
begin
  perform 1 from entitlement_expiries where user_id = p_user_id and stock_keeping_unit = p_sku for update;
  -- The row locked first, so that the expiry it had is the one the update replaces (an update's returning has only
  -- the new values).
  with o as (
    select b.expires_at from entitlements b
    where b.user_id = p_user_id and b.stock_keeping_unit = p_sku
    for update
  ), c as (
    update entitlements e
    set expires_at = p_expires_at, version = e.version + 1, updated_at = p_now, source = p_reason,
        source_id = p_purchase_id
    from o
    where e.user_id = p_user_id and e.stock_keeping_unit = p_sku and e.status = 'ACTIVE'
      and case when p_version is null then e.expires_at < p_expires_at
               else e.version = p_version and e.expires_at > p_expires_at end
    returning e.stock_keeping_unit, e.version, e.source, e.source_id, api_instant(o.expires_at) as expires_before
  )
  select coalesce(jsonb_agg(to_jsonb(c)), '[]') into v_changed from c;
  return v_changed;
end $$;
