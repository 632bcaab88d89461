-- The facts of an applied change of entitlements, as its command remembers them: each item of the request, in its
-- order, with its version and updated_at and whether this change changed it (p_changed, what the upsert returned),
-- read under the locks the change took. The service makes the reply of them (features/entitlements/replies.ts).
-- One item (a grant, a revoke, an extension) is read by its key alone: the same plan for every call, kept for the
-- session. The join over the request's items had a cheap custom plan (the array's one element known) and a generic
-- plan costed for ten elements, so PL/pgSQL planned it again at every call, about 80 µs of the database's CPU a grant.
create or replace function entitlement_facts(p_user_id text, p_skus text[], p_changed jsonb)
returns jsonb language plpgsql stable as $$
declare
  v_version bigint;
  v_updated_at timestamptz;
begin
  if cardinality(p_skus) = 1 then
    -- The one item, changed by this change: its version and updated_at are what the upsert returned, read again for
    -- nothing. (A change whose p_changed has no updated_at reads it.)
    if p_changed -> 0 ->> 'stock_keeping_unit' = p_skus[1] and p_changed -> 0 ? 'updated_at' then
      return jsonb_build_object('kind', 'changed', 'items', jsonb_build_array(jsonb_build_object(
               'stock_keeping_unit', p_skus[1], 'version', p_changed -> 0 -> 'version',
               'updated_at', p_changed -> 0 -> 'updated_at', 'changed', true)));
    end if;
    select e.version, e.updated_at into v_version, v_updated_at
    from entitlements e where e.user_id = p_user_id and e.stock_keeping_unit = p_skus[1];
    return jsonb_build_object('kind', 'changed', 'items', case when found then jsonb_build_array(jsonb_build_object(
             'stock_keeping_unit', p_skus[1], 'version', v_version, 'updated_at', v_updated_at,
             'changed', p_changed @> jsonb_build_array(jsonb_build_object('stock_keeping_unit', p_skus[1]))
           )) end);
  end if;
  return jsonb_build_object('kind', 'changed', 'items', (
    select jsonb_agg(jsonb_build_object(
             'stock_keeping_unit', e.stock_keeping_unit, 'version', e.version, 'updated_at', e.updated_at,
             'changed', p_changed @> jsonb_build_array(jsonb_build_object('stock_keeping_unit', e.stock_keeping_unit))
           ) order by item.n)
    from unnest(p_skus) with ordinality as item(sku, n)
    join entitlements e on e.user_id = p_user_id and e.stock_keeping_unit = item.sku));
end $$;
