-- A grant or revoke in one call (ADR-24): the key's advisory lock and live-record lookup, the entitlement
-- upsert, the audit row, the outbox event, the expiry a grant sets and the idempotency record, in one server-side
-- function, so a command is one statement and one round trip instead of begin, two exchanges and commit. Runs with
-- search_path = entitlement; the body's names resolve through the caller's search_path, as every query of the service.
--
-- Called outside an explicit transaction, the call is its own transaction: any error rolls everything back. Each
-- statement of a VOLATILE plpgsql function takes a fresh snapshot, so the lookup after the lock sees what the lock's
-- previous holder committed, as the lookup after `pg_advisory_xact_lock` did in the client's
-- transaction. The caller computes everything that is not the database's to decide: the request hash and the
-- lock key, ids, the request's clock, the reply shapes and the event; the function sets only the version the
-- upsert produced (into the 200 body and the payload). It uses no random and no clock but `now()` for "live", as the
-- lookup it replaces. SECURITY INVOKER (the default): it can do nothing its caller's role could not; the runtime
-- role needs only EXECUTE, which PUBLIC has.
--
-- A statement_timeout set inside a function does not bound the running statement, so waits are bounded by
-- lock_timeout instead (SQLSTATE 55P03, a 503 like the 57014 of before): the advisory lock, the entitlement's row
-- lock and a concurrent insert of the same key are the waits a command can meet.
--
-- outcome: 'stored' (a live record: its hash, code and body, for a replay or a key conflict), 'past' (nothing done:
-- the grant's expires_at is not after p_now), 'state_conflict' (the 409 stored) or 'applied' (the 200 stored).
create function entitlement_command(
  p_action text,                     -- 'GRANT' or 'REVOKE'
  p_caller text,                     -- the token name; '' when authentication is disabled (audit: null)
  p_idem_key text,
  p_lock_key bigint,
  p_request_hash text,
  p_user_id text,
  p_sku text,
  p_reason text,
  p_purchase_id text,
  p_expires_at timestamptz,          -- a grant's expiry, or null
  p_now timestamptz,                 -- the request's clock: granted/revoked/updated/occurred/created at
  p_record_expires_at timestamptz,   -- when the idempotency record stops being live
  p_lock_timeout_ms int,
  p_audit_id uuid,
  p_detail jsonb,
  p_trace_id text,
  p_event_id uuid,
  p_event_type text,
  p_aggregate_key text,
  p_payload jsonb,                   -- the event's payload; its version is set here
  p_traceparent text,
  p_applied jsonb,                   -- the 200 body; its version is set here
  p_conflict jsonb                   -- the 409 body of a refused transition
) returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_expires_at timestamptz)
language plpgsql volatile security invoker as $$
declare
  v_version bigint;
  v_body jsonb;
begin
  perform set_config('lock_timeout', p_lock_timeout_ms::text, true);
  perform pg_advisory_xact_lock(p_lock_key);

  return query
    select 'stored', k.request_hash, k.response_code, k.response_body, k.expires_at
    from idempotency_keys k
    where k.caller = p_caller and k.idem_key = p_idem_key and k.expires_at > now();
  if found then
    return;
  end if;
  if p_expires_at is not null and p_expires_at <= p_now then
    return query select 'past', null::text, null::int, null::jsonb, null::timestamptz;
    return;
  end if;

  if p_action = 'GRANT' then
    -- Unless ACTIVE: a new row is v0, a REVOKED row goes to v+1 (entitlements/queries.ts upsertGrantsIfNotActive).
    insert into entitlements as e
      (user_id, stock_keeping_unit, status, granted_at, revoked_at, source, source_id, version, updated_at, expires_at)
    values (p_user_id, p_sku, 'ACTIVE', p_now, null, p_reason, p_purchase_id, 0, p_now, p_expires_at)
    on conflict (user_id, stock_keeping_unit) do update set
      status = excluded.status,
      granted_at = excluded.granted_at,
      revoked_at = null,
      source = excluded.source,
      source_id = excluded.source_id,
      version = e.version + 1,
      updated_at = excluded.updated_at,
      expires_at = excluded.expires_at
    where e.status <> 'ACTIVE'
    returning e.version into v_version;
  elsif p_action = 'REVOKE' then
    -- Unless REVOKED; granted_at is kept, a pair never granted becomes a REVOKED v0 row, as in the Java original.
    insert into entitlements as e
      (user_id, stock_keeping_unit, status, granted_at, revoked_at, source, source_id, version, updated_at)
    values (p_user_id, p_sku, 'REVOKED', null, p_now, p_reason, p_purchase_id, 0, p_now)
    on conflict (user_id, stock_keeping_unit) do update set
      status = excluded.status,
      granted_at = e.granted_at,
      revoked_at = excluded.revoked_at,
      source = excluded.source,
      source_id = excluded.source_id,
      version = e.version + 1,
      updated_at = excluded.updated_at,
      expires_at = null
    where e.status <> 'REVOKED'
    returning e.version into v_version;
  else
    raise exception 'entitlement_command: unknown action %', p_action;
  end if;

  if v_version is null then
    -- A refused transition: only its 409 is remembered, so that a retry with this key gets the same answer.
    v_body := p_conflict;
  else
    v_body := p_applied || jsonb_build_object('version', v_version);
    insert into entitlement_audit
      (audit_id, occurred_at, user_id, stock_keeping_unit, action, version, source, source_id, request_id, caller,
       detail, trace_id)
    values (p_audit_id, p_now, p_user_id, p_sku, p_action, v_version, p_reason, p_purchase_id, p_idem_key,
            nullif(p_caller, ''), p_detail, p_trace_id);
    insert into outbox_events
      (event_id, event_type, aggregate_key, payload, status, attempt_count, created_at, traceparent)
    values (p_event_id, p_event_type, p_aggregate_key, p_payload || jsonb_build_object('version', v_version),
            'PENDING', 0, p_now, p_traceparent);
    if p_expires_at is not null then
      -- As expiry/schedule.ts expiryUpsert: (re)set PENDING and due at the expiry; a claim in flight is dropped.
      insert into entitlement_expiries as x
        (user_id, stock_keeping_unit, expires_at, status, due_at, attempt_count, trace_id, created_at, updated_at)
      values (p_user_id, p_sku, p_expires_at, 'PENDING', p_expires_at, 0, p_trace_id, p_now, p_now)
      on conflict (user_id, stock_keeping_unit) do update set
        expires_at = excluded.expires_at,
        status = 'PENDING',
        due_at = excluded.due_at,
        attempt_count = 0,
        locked_by = null,
        locked_at = null,
        last_error = null,
        executed_at = null,
        trace_id = excluded.trace_id,
        updated_at = excluded.updated_at;
    end if;
  end if;

  -- An expired record is overwritten; a live one cannot be here under the lock, after the lookup found none.
  insert into idempotency_keys as k (caller, idem_key, request_hash, response_code, response_body, expires_at)
  values (p_caller, p_idem_key, p_request_hash, case when v_version is null then 409 else 200 end, v_body,
          p_record_expires_at)
  on conflict (caller, idem_key) do update set
    request_hash = excluded.request_hash,
    response_code = excluded.response_code,
    response_body = excluded.response_body,
    expires_at = excluded.expires_at
  where k.expires_at <= now();
  if not found then
    raise exception 'idempotency invariant violated: a live record appeared under the lock';
  end if;

  return query
    select case when v_version is null then 'state_conflict' else 'applied' end, p_request_hash,
           case when v_version is null then 409 else 200 end, v_body, p_record_expires_at;
end $$;
