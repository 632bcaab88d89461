-- An extension under its Idempotency-Key, one statement, as a grant is: 'stored', 'past', else the ACTIVE item
-- whose expiry is earlier than p_expires_at gets it ('applied', its expiry rescheduled; the facts of
-- entitlement_facts), or nothing changes and the refusal that fits the row is remembered ('state_conflict'; the facts:
-- not_active, no_expiry, or not_later with the current expiry). An entitlement without expiry never expires, so no
-- date is later: it is refused like an earlier one. The service makes the reply of the facts.
-- With p_version, the console's undo of an extension (undo_extension): the item still at the version the extension
-- left gets back the earlier expiry it replaced (audit EXTEND, event EntitlementExtended), else the refusal is
-- changed_since or not_earlier. Only that undo moves an expiry back, and only at the version it is told.
create or replace function extend_entitlement(
  p_user_id text,
  p_sku text,
  p_reason text,
  p_purchase_id text,
  p_expires_at timestamptz,          -- the later expiry (an undo's: the expiry the extension replaced)
  p_now timestamptz,
  p_trace_id text,
  p_traceparent text,
  p_event_type text,
  p_payload jsonb,
  p_detail jsonb,
  p_idem idempotency_call,
  p_version bigint default null      -- an undo's: the version the extension left, at which only it applies
) returns setof command_outcome language plpgsql volatile as $$
declare
  v_out command_outcome;
  v_changed jsonb;
  v_facts jsonb;
begin
  v_out := idempotency_stored(p_idem);
  if v_out.outcome is not null then
    return next v_out;
    return;
  end if;
  if p_expires_at <= p_now then
    return next row('past', null, null, null, null, null)::command_outcome;
    return;
  end if;
  v_changed := entitlement_set_expiry(p_user_id, p_sku, p_reason, p_purchase_id, p_expires_at, p_now, p_version);
  if v_changed <> '[]' then
    perform entitlement_record('EXTEND', p_user_id, v_changed, p_now, p_trace_id, p_traceparent, p_event_type,
                               p_payload, p_detail, p_idem.caller, p_idem.idem_key, p_expires_at);
    return next idempotency_keep(p_idem, 'applied', 200, entitlement_facts(p_user_id, array[p_sku], v_changed));
    return;
  end if;
  select case when p_version is not null then
                case when e.status = 'ACTIVE' and e.version = p_version then '{"kind": "not_earlier"}'::jsonb
                     else '{"kind": "changed_since"}'::jsonb end
              when e.status is distinct from 'ACTIVE' then '{"kind": "not_active"}'::jsonb
              when e.expires_at is null then '{"kind": "no_expiry"}'::jsonb
              else jsonb_build_object('kind', 'not_later', 'expires_at', e.expires_at) end
  into v_facts
  from (select) one
  left join entitlements e on e.user_id = p_user_id and e.stock_keeping_unit = p_sku;
  return next idempotency_keep(p_idem, 'state_conflict', 409, v_facts);
end $$;
