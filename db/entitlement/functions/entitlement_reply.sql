-- The reply the service made for an applied change ({code, body}), with the values only the database knows: the one
-- item's new version, or, when the body lists items (a bundle), each item's version, updated_at and whether this
-- change changed it, read under the locks the change took, in the body's order. plpgsql rather than sql: a SQL
-- function that cannot be inlined is parsed and planned again at every call, a plpgsql one keeps its plans for the
-- session (docs/benchmarks.md, "The write functions").
create or replace function entitlement_reply(p_reply jsonb, p_user_id text, p_changed jsonb)
returns jsonb language plpgsql stable as $$
begin
  if p_reply #> '{body,items}' is null then
    return jsonb_set(p_reply, '{body,version}', p_changed -> 0 -> 'version');
  end if;
  return jsonb_set(p_reply, '{body,items}', (
    select jsonb_agg(item.value || jsonb_build_object(
             'version', e.version, 'updated_at', api_instant(e.updated_at),
             'changed', p_changed @> jsonb_build_array(jsonb_build_object('stock_keeping_unit', e.stock_keeping_unit))
           ) order by item.n)
    from jsonb_array_elements(p_reply #> '{body,items}') with ordinality as item(value, n)
    join entitlements e on e.user_id = p_user_id and e.stock_keeping_unit = item.value ->> 'stock_keeping_unit'));
end $$;
