-- The facts of an applied change of entitlements, as its command remembers them: each item of the request, in its
-- order, with its version and updated_at and whether this change changed it (p_changed, what the upsert returned),
-- read under the locks the change took. The service makes the reply of them (features/entitlements/replies.ts).
create or replace function entitlement_facts(p_user_id text, p_skus text[], p_changed jsonb)
returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object('kind', 'changed', 'items', (
    select jsonb_agg(jsonb_build_object(
             'stock_keeping_unit', e.stock_keeping_unit, 'version', e.version, 'updated_at', e.updated_at,
             'changed', p_changed @> jsonb_build_array(jsonb_build_object('stock_keeping_unit', e.stock_keeping_unit))
           ) order by item.n)
    from unnest(p_skus) with ordinality as item(sku, n)
    join entitlements e on e.user_id = p_user_id and e.stock_keeping_unit = item.sku));
end $$;
