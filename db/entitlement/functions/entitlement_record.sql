-- What every applied change of entitlements writes beside the rows themselves, and the only code that writes it: per
-- changed item (p_changed: [{stock_keeping_unit, version, source, source_id, detail?, expires_before?}]) its audit row
-- (with the expiry an extension replaced, expires_before, added to its detail) and its outbox event, and for a grant
-- or an extension with an expiry the item's expiry row, (re)set PENDING and due at the expiry.
-- A claim in flight for an older expiry loses its lock (locked_by is cleared), so its execution changes nothing.
-- Expiry rows are written in SKU order, the order every writer of them follows.
create or replace function entitlement_record(
  p_action text,                     -- GRANT, REVOKE, EXTEND or EXPIRE: the audit row's action
  p_user_id text,
  p_changed jsonb,
  p_now timestamptz,
  p_trace_id text,
  p_traceparent text,
  p_event_type text,
  p_payload jsonb,                   -- the event; event_id, stock_keeping_unit, source_id, version set per item
  p_detail jsonb,                    -- the audit detail, unless the item brings its own; stock_keeping_unit set
  p_caller text,                     -- the token name ('' when authentication is disabled; null for the scheduler)
  p_idem_key text,                   -- the audit row's request_id (null for the scheduler)
  p_expires_at timestamptz           -- the expiry a grant or an extension set, if any
) returns void language plpgsql volatile as $$
begin
  insert into entitlement_audit
    (audit_id, occurred_at, user_id, stock_keeping_unit, action, version, source, source_id, request_id, caller,
     detail, trace_id)
  select gen_random_uuid(), p_now, p_user_id, c.stock_keeping_unit, p_action, c.version, c.source, c.source_id,
         p_idem_key, nullif(p_caller, ''),
         coalesce(c.detail, p_detail || jsonb_build_object('stock_keeping_unit', c.stock_keeping_unit))
           || case when c.expires_before is null then '{}'::jsonb
                   else jsonb_build_object('expires_before', c.expires_before) end,
         p_trace_id
  from jsonb_to_recordset(p_changed) as c(stock_keeping_unit text, version bigint, source text, source_id text,
                                          detail jsonb, expires_before text);

  insert into outbox_events
    (event_id, event_type, aggregate_key, payload, status, attempt_count, created_at, traceparent)
  select c.id, p_event_type, p_user_id || ':' || c.stock_keeping_unit,
         p_payload || jsonb_build_object('event_id', c.id, 'stock_keeping_unit', c.stock_keeping_unit,
                                         'source_id', c.source_id, 'version', c.version),
         'PENDING', 0, p_now, p_traceparent
  from (select gen_random_uuid() as id, r.*
        from jsonb_to_recordset(p_changed) as r(stock_keeping_unit text, version bigint, source_id text)) c;

  if p_action in ('GRANT', 'EXTEND') and p_expires_at is not null then
    insert into entitlement_expiries as x
      (user_id, stock_keeping_unit, expires_at, status, due_at, attempt_count, trace_id, created_at, updated_at)
    select p_user_id, c.stock_keeping_unit, p_expires_at, 'PENDING', p_expires_at, 0, p_trace_id, p_now, p_now
    from jsonb_to_recordset(p_changed) as c(stock_keeping_unit text)
    order by c.stock_keeping_unit
    on conflict (user_id, stock_keeping_unit) do update set
      expires_at = excluded.expires_at, status = 'PENDING', due_at = excluded.due_at, attempt_count = 0,
      locked_by = null, locked_at = null, last_error = null, executed_at = null, trace_id = excluded.trace_id,
      updated_at = excluded.updated_at;
  end if;
end $$;
