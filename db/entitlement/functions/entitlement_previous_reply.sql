-- The reply body the previous release expects for the facts of a change of entitlements
-- (entitlement_status_change, extend_entitlement, undo_extension), made here for its wrappers only (entitlement_grant,
-- entitlement_revoke, entitlement_extend, entitlement_extend_undo) from the replies it passes: on a replay the
-- request is the same (its hash is), so what the reply takes from the request is in them, and what it takes from the
-- change (each item's version, updated_at, changed; the current expiry a refusal names) is in the facts. The release
-- after drops it with them.
create or replace function entitlement_previous_reply(p_applied jsonb, p_refused jsonb, p_facts jsonb)
returns jsonb language plpgsql stable as $$
begin
  case p_facts ->> 'kind'
    when 'unchanged' then return p_refused -> 'body';
    when 'not_active' then return p_refused #> '{not_active,body}';
    when 'no_expiry' then return p_refused #> '{no_expiry,body}';
    when 'not_earlier' then return p_refused #> '{not_earlier,body}';
    when 'changed_since' then return p_refused #> '{changed,body}';
    when 'not_later' then
      return jsonb_set(p_refused #> '{not_later,body}', '{message}', to_jsonb(replace(
        p_refused #>> '{not_later,body,message}', '{expires_at}',
        api_instant((p_facts ->> 'expires_at')::timestamptz))));
    else null;
  end case;
  if p_applied #> '{body,items}' is null then
    return (p_applied -> 'body') || jsonb_build_object(
      'version', p_facts #> '{items,0,version}',
      'updated_at', api_instant((p_facts #>> '{items,0,updated_at}')::timestamptz));
  end if;
  return jsonb_set(p_applied -> 'body', '{items}', (
    select jsonb_agg(asked.value || jsonb_build_object(
             'version', fact.value -> 'version', 'updated_at', api_instant((fact.value ->> 'updated_at')::timestamptz),
             'changed', fact.value -> 'changed') order by asked.n)
    from jsonb_array_elements(p_applied #> '{body,items}') with ordinality as asked(value, n)
    join jsonb_array_elements(p_facts -> 'items') with ordinality as fact(value, n) on fact.n = asked.n));
end $$;
