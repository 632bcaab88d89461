-- One write path. Every change of an entitlement (a grant, a revoke, a bundle grant, an extension, the scheduler's
-- expiry) and every points command is one call of one server-side function: one statement, one round trip. These
-- functions are the only code that writes the entitlement upsert, its audit rows, its outbox events, its expiry rows
-- and an idempotency record; the service computes what is not the database's to decide (request hash, lock key,
-- clock, the reply of one item, the event's payload) and calls them. Runs with search_path = entitlement; the bodies'
-- names resolve through the caller's search_path, as every query of the service. SECURITY INVOKER (the default): they
-- can do nothing their caller's role could not; the runtime role needs only EXECUTE, which PUBLIC has.
--
-- Called outside an explicit transaction, a call is its own transaction: any error rolls everything back. Each
-- statement of a VOLATILE plpgsql function takes a fresh snapshot, so the lookup after the key's advisory lock sees
-- what the lock's previous holder committed. A statement_timeout set inside a function does not bound the running
-- statement, so waits are bounded by lock_timeout instead (SQLSTATE 55P03, answered 503): the advisory lock, the rows'
-- locks and a concurrent insert of the same key are the waits a command can meet.
--
-- Nothing here sends a NOTIFY or takes a lock shared by every writer: the service wakes its own relay and scheduler
-- after commit (docs/architecture.md, "Waking the workers").

drop function entitlement_command(text, text, text, bigint, text, text, text, text, text, timestamptz, timestamptz,
  timestamptz, int, uuid, jsonb, text, uuid, text, text, jsonb, text, jsonb, jsonb);

-- The key's advisory lock, then its live record, if any. Every idempotent command opens with this.
create function idempotency_open(p_caller text, p_idem_key text, p_lock_key bigint, p_lock_timeout_ms int)
returns table (request_hash text, response_code int, response_body jsonb, expires_at timestamptz)
language plpgsql volatile as $$
begin
  perform set_config('lock_timeout', p_lock_timeout_ms::text, true);
  perform pg_advisory_xact_lock(p_lock_key);
  return query
    select k.request_hash, k.response_code, k.response_body, k.expires_at
    from idempotency_keys k
    where k.caller = p_caller and k.idem_key = p_idem_key and k.expires_at > now();
end $$;

-- The reply remembered under the key. An expired record is overwritten; a live one cannot be there under the lock,
-- after idempotency_open found none.
create function idempotency_store(p_caller text, p_idem_key text, p_request_hash text, p_code int, p_body jsonb,
                                  p_expires_at timestamptz)
returns void language plpgsql volatile as $$
begin
  insert into idempotency_keys as k (caller, idem_key, request_hash, response_code, response_body, expires_at)
  values (p_caller, p_idem_key, p_request_hash, p_code, p_body, p_expires_at)
  on conflict (caller, idem_key) do update set
    request_hash = excluded.request_hash,
    response_code = excluded.response_code,
    response_body = excluded.response_body,
    expires_at = excluded.expires_at
  where k.expires_at <= now();
  if not found then
    raise exception 'idempotency invariant violated: a live record appeared under the lock';
  end if;
end $$;

-- An instant as the API writes it (JavaScript's toISOString): UTC, milliseconds, "Z".
create function api_instant(p_at timestamptz) returns text language sql immutable as $$
  select to_char(p_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- outcome: 'stored' (a live record: its hash, code and body, for a replay or a key conflict; nothing done), 'past'
-- (nothing done: expires_at is not after p_now), 'state_conflict' (the 409 stored), 'applied' (the 200 stored). A
-- scheduled expiry (no key): 'applied' (revoked), 'unchanged' (finalized, the expiry was moot) or 'lost' (the claim
-- was lost: nothing done).
create function entitlement_change(
  p_action text,                     -- GRANT, REVOKE, EXTEND or EXPIRE, done to every item
  p_user_id text,
  p_skus text[],                     -- the items in the request's order; one unless a bundle grant
  p_bundle boolean,                  -- reply with every item (a bundle grant) rather than the one item's body
  p_reason text,                     -- the entitlement's new source (EXPIRE: 'expiry')
  p_purchase_id text,                -- its new source_id (EXPIRE: null, the row's is kept)
  p_expires_at timestamptz,          -- GRANT: the items' expiry or null; EXTEND: the later expiry; EXPIRE: null
  p_now timestamptz,                 -- the request's (or the scheduler's) clock
  p_trace_id text,
  p_traceparent text,
  p_event_type text,
  p_payload jsonb,                   -- the event; event_id, stock_keeping_unit, source_id, version set per item
  p_detail jsonb,                    -- the audit detail; stock_keeping_unit set per item
  p_reply jsonb,                     -- the 200 body of one item, its version set here; null for a bundle
  p_caller text,                     -- the token name ('' when authentication is disabled); null for EXPIRE
  p_idem_key text,                   -- null for EXPIRE, which has no idempotency record
  p_lock_key bigint,
  p_request_hash text,
  p_record_expires_at timestamptz,   -- when the idempotency record stops being live
  p_lock_timeout_ms int,
  p_locked_by text                   -- EXPIRE: the scheduler's claim, which guards the finalize
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_expires_at timestamptz)
language plpgsql volatile as $$
declare
  v_changed jsonb;   -- [{stock_keeping_unit, version, source, source_id, detail}] of the items changed
  v_finalized boolean := true;
  v_code int;
  v_body jsonb;
begin
  if p_idem_key is not null then
    return query select 'stored', o.request_hash, o.response_code, o.response_body, o.expires_at
                 from idempotency_open(p_caller, p_idem_key, p_lock_key, p_lock_timeout_ms) o;
    if found then
      return;
    end if;
  end if;
  if p_action <> 'EXPIRE' and p_expires_at is not null and p_expires_at <= p_now then
    return query select 'past', null::text, null::int, null::jsonb, null::timestamptz;
    return;
  end if;

  if p_action = 'GRANT' then
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
    select jsonb_agg(to_jsonb(c)) into v_changed from c;
  elsif p_action = 'REVOKE' then
    -- Unless REVOKED; granted_at is kept, a pair never granted becomes a REVOKED v0 row.
    with c as (
      insert into entitlements as e
        (user_id, stock_keeping_unit, status, granted_at, revoked_at, source, source_id, version, updated_at)
      select p_user_id, item.sku, 'REVOKED', null, p_now, p_reason, p_purchase_id, 0, p_now
      from unnest(p_skus) as item(sku)
      order by item.sku
      on conflict (user_id, stock_keeping_unit) do update set
        status = excluded.status, granted_at = e.granted_at, revoked_at = excluded.revoked_at,
        source = excluded.source, source_id = excluded.source_id, version = e.version + 1,
        updated_at = excluded.updated_at, expires_at = null
      where e.status <> 'REVOKED'
      returning e.stock_keeping_unit, e.version, e.source, e.source_id
    )
    select jsonb_agg(to_jsonb(c)) into v_changed from c;
  elsif p_action = 'EXTEND' then
    -- The expiry row before the entitlement's: the scheduler's order (EXPIRE below), so the two never deadlock. An
    -- entitlement without expiry never expires, so no date is later: it is refused like an earlier one.
    perform 1 from entitlement_expiries
    where user_id = p_user_id and stock_keeping_unit = any(p_skus)
    order by stock_keeping_unit
    for update;
    with c as (
      update entitlements e
      set expires_at = p_expires_at, version = e.version + 1, updated_at = p_now, source = p_reason,
          source_id = p_purchase_id
      where e.user_id = p_user_id and e.stock_keeping_unit = any(p_skus) and e.status = 'ACTIVE'
        and e.expires_at < p_expires_at
      returning e.stock_keeping_unit, e.version, e.source, e.source_id
    )
    select jsonb_agg(to_jsonb(c)) into v_changed from c;
  elsif p_action = 'EXPIRE' then
    -- The claimed expiry DONE (guarded by the claim: when it was lost nothing else happens) and, only if the
    -- entitlement is still ACTIVE with an expiry that has passed, its revoke; a revoke, re-grant or extension since
    -- made the expiry moot.
    with done as (
      update entitlement_expiries
      set status = 'DONE', executed_at = p_now, updated_at = p_now, locked_by = null, locked_at = null,
          last_error = null
      where user_id = p_user_id and stock_keeping_unit = any(p_skus) and locked_by = p_locked_by
        and status = 'PROCESSING'
      returning stock_keeping_unit, expires_at
    ), c as (
      update entitlements e
      set status = 'REVOKED', revoked_at = p_now, source = p_reason, version = e.version + 1, updated_at = p_now,
          expires_at = null
      from done
      where e.user_id = p_user_id and e.stock_keeping_unit = done.stock_keeping_unit and e.status = 'ACTIVE'
        and e.expires_at <= p_now
      returning e.stock_keeping_unit, e.version, e.source, coalesce(e.source_id, '') as source_id,
                jsonb_build_object('expires_at', done.expires_at) as detail
    )
    select exists (select from done), (select jsonb_agg(to_jsonb(c)) from c) into v_finalized, v_changed;
  else
    raise exception 'entitlement_change: unknown action %', p_action;
  end if;
  v_changed := coalesce(v_changed, '[]');

  insert into entitlement_audit
    (audit_id, occurred_at, user_id, stock_keeping_unit, action, version, source, source_id, request_id, caller,
     detail, trace_id)
  select gen_random_uuid(), p_now, p_user_id, c.stock_keeping_unit, p_action, c.version, c.source, c.source_id,
         p_idem_key, nullif(p_caller, ''),
         coalesce(c.detail, p_detail || jsonb_build_object('stock_keeping_unit', c.stock_keeping_unit)), p_trace_id
  from jsonb_to_recordset(v_changed) as c(stock_keeping_unit text, version bigint, source text, source_id text,
                                           detail jsonb);

  insert into outbox_events
    (event_id, event_type, aggregate_key, payload, status, attempt_count, created_at, traceparent)
  select c.id, p_event_type, p_user_id || ':' || c.stock_keeping_unit,
         p_payload || jsonb_build_object('event_id', c.id, 'stock_keeping_unit', c.stock_keeping_unit,
                                         'source_id', c.source_id, 'version', c.version),
         'PENDING', 0, p_now, p_traceparent
  from (select gen_random_uuid() as id, r.*
        from jsonb_to_recordset(v_changed) as r(stock_keeping_unit text, version bigint, source_id text)) c;

  if p_action in ('GRANT', 'EXTEND') and p_expires_at is not null then
    -- (Re)set PENDING and due at the expiry; a claim in flight for an older expiry loses its lock (locked_by is
    -- cleared), so its execution changes nothing.
    insert into entitlement_expiries as x
      (user_id, stock_keeping_unit, expires_at, status, due_at, attempt_count, trace_id, created_at, updated_at)
    select p_user_id, c.stock_keeping_unit, p_expires_at, 'PENDING', p_expires_at, 0, p_trace_id, p_now, p_now
    from jsonb_to_recordset(v_changed) as c(stock_keeping_unit text)
    order by c.stock_keeping_unit
    on conflict (user_id, stock_keeping_unit) do update set
      expires_at = excluded.expires_at, status = 'PENDING', due_at = excluded.due_at, attempt_count = 0,
      locked_by = null, locked_at = null, last_error = null, executed_at = null, trace_id = excluded.trace_id,
      updated_at = excluded.updated_at;
  end if;

  if p_idem_key is null then
    return query select case when not v_finalized then 'lost'
                             when jsonb_array_length(v_changed) > 0 then 'applied'
                             else 'unchanged' end,
                        null::text, null::int, null::jsonb, null::timestamptz;
    return;
  end if;

  if p_bundle then
    -- Every item in the request's order, read under the locks the upsert took.
    v_code := 200;
    select jsonb_build_object('user_id', p_user_id, 'items', jsonb_agg(jsonb_build_object(
             'stock_keeping_unit', e.stock_keeping_unit, 'status', e.status, 'version', e.version,
             'updated_at', api_instant(e.updated_at),
             'changed', v_changed @> jsonb_build_array(jsonb_build_object('stock_keeping_unit', e.stock_keeping_unit))
           ) order by item.n))
    into v_body
    from unnest(p_skus) with ordinality as item(sku, n)
    join entitlements e on e.user_id = p_user_id and e.stock_keeping_unit = item.sku;
  elsif jsonb_array_length(v_changed) = 0 then
    -- A refused transition: its 409 is remembered, so a retry with this key gets the same answer.
    v_code := 409;
    select jsonb_build_object('code', 'ENTITLEMENT_STATE_CONFLICT', 'message', case
             when p_action = 'GRANT' then 'already ACTIVE'
             when p_action = 'REVOKE' then 'already REVOKED'
             when e.status is distinct from 'ACTIVE' then 'not ACTIVE'
             when e.expires_at is null then 'the entitlement has no expiry to extend'
             else 'expires_at must be later than the current one (' || api_instant(e.expires_at) || ')' end)
    into v_body
    from (select) one
    left join entitlements e on e.user_id = p_user_id and e.stock_keeping_unit = p_skus[1];
  else
    v_code := 200;
    v_body := p_reply || jsonb_build_object('version', (v_changed -> 0 ->> 'version')::bigint);
  end if;

  perform idempotency_store(p_caller, p_idem_key, p_request_hash, v_code, v_body, p_record_expires_at);
  return query select case when v_code = 409 then 'state_conflict' else 'applied' end, p_request_hash, v_code,
                      v_body, p_record_expires_at;
end $$;

-- A reservation as the API answers it (the keys the service renders in its order).
create function point_reservation_reply(r point_reservations) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'reservation_id', r.reservation_id, 'user_id', r.user_id, 'point_amount', r.point_amount,
    'execute_at', api_instant(r.execute_at), 'reason', r.reason, 'status', r.status,
    'created_at', api_instant(r.created_at), 'updated_at', api_instant(r.updated_at))
  || case when r.executed_at is null then '{}' else jsonb_build_object('executed_at', api_instant(r.executed_at)) end
  || case when r.transaction_id is null then '{}' else jsonb_build_object('transaction_id', r.transaction_id) end
  || case when r.status = 'FAILED' and r.last_error is not null then jsonb_build_object('last_error', r.last_error)
          else '{}' end
$$;

-- A points command under its Idempotency-Key, as entitlement_change: RESERVE inserts a PENDING reservation with its
-- audit row (201); CANCEL moves a PENDING one to CANCELLED with its audit row (200) or refuses (409, remembered).
-- outcome: 'stored', 'applied', 'state_conflict', or 'not_found' (a cancel of an unknown id: nothing remembered, the
-- caller may have mistyped it).
create function point_command(
  p_action text,                     -- RESERVE or CANCEL
  p_reservation_id uuid,
  p_user_id text,                    -- RESERVE: the reservation's fields
  p_point_amount bigint,
  p_execute_at timestamptz,
  p_reason text,
  p_now timestamptz,
  p_trace_id text,
  p_caller text,
  p_idem_key text,
  p_lock_key bigint,
  p_request_hash text,
  p_record_expires_at timestamptz,
  p_lock_timeout_ms int
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_expires_at timestamptz)
language plpgsql volatile as $$
declare
  v_row point_reservations;
  v_balance bigint;
  v_code int;
  v_body jsonb;
begin
  return query select 'stored', o.request_hash, o.response_code, o.response_body, o.expires_at
               from idempotency_open(p_caller, p_idem_key, p_lock_key, p_lock_timeout_ms) o;
  if found then
    return;
  end if;

  if p_action = 'RESERVE' then
    -- A balance leaves the service as a JSON number, exact only up to 2^53 - 1: a reservation that would take the
    -- user's balance past it is refused (409 POINTS_BALANCE_LIMIT, remembered like any reply).
    select coalesce((select b.balance from point_balances b where b.user_id = p_user_id), 0) into v_balance;
    if v_balance + p_point_amount > 9007199254740991 then
      v_code := 409;
      v_body := jsonb_build_object('code', 'POINTS_BALANCE_LIMIT',
        'message', 'the balance may not exceed 9007199254740991 points; it is ' || v_balance);
      perform idempotency_store(p_caller, p_idem_key, p_request_hash, v_code, v_body, p_record_expires_at);
      return query select 'state_conflict', p_request_hash, v_code, v_body, p_record_expires_at;
      return;
    end if;
    insert into point_reservations
      (reservation_id, user_id, point_amount, execute_at, reason, status, due_at, trace_id, created_by, created_at,
       updated_at)
    values (p_reservation_id, p_user_id, p_point_amount, p_execute_at, p_reason, 'PENDING', p_execute_at, p_trace_id,
            nullif(p_caller, ''), p_now, p_now)
    returning * into v_row;
    insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, caller, trace_id, detail)
    values (gen_random_uuid(), p_now, v_row.reservation_id, v_row.user_id, 'RESERVE', nullif(p_caller, ''),
            p_trace_id, jsonb_build_object('point_amount', v_row.point_amount, 'execute_at', v_row.execute_at));
    v_code := 201;
    v_body := point_reservation_reply(v_row);
  elsif p_action = 'CANCEL' then
    -- The row lock makes it exclusive with the scheduler's claim: whichever comes first wins.
    update point_reservations set status = 'CANCELLED', updated_at = p_now
    where reservation_id = p_reservation_id and status = 'PENDING'
    returning * into v_row;
    if found then
      insert into point_audit (audit_id, occurred_at, reservation_id, user_id, action, caller, trace_id)
      values (gen_random_uuid(), p_now, v_row.reservation_id, v_row.user_id, 'CANCEL', nullif(p_caller, ''),
              p_trace_id);
      v_code := 200;
      v_body := point_reservation_reply(v_row);
    else
      select * into v_row from point_reservations where reservation_id = p_reservation_id;
      if not found then
        return query select 'not_found', null::text, null::int, null::jsonb, null::timestamptz;
        return;
      end if;
      v_code := 409;
      v_body := jsonb_build_object('code', 'RESERVATION_STATE_CONFLICT',
        'message', 'reservation is ' || v_row.status || '; only a PENDING reservation can be cancelled');
    end if;
  else
    raise exception 'point_command: unknown action %', p_action;
  end if;

  perform idempotency_store(p_caller, p_idem_key, p_request_hash, v_code, v_body, p_record_expires_at);
  return query select case when v_code = 409 then 'state_conflict' else 'applied' end, p_request_hash, v_code,
                      v_body, p_record_expires_at;
end $$;
