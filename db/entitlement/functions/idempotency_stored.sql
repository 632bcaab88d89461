-- The opening of every command function: the key's advisory lock, then its live record, if any, as the command's row
-- ('stored': nothing is to be done), with the facts of its answer (a record stored by this release) or its body (one
-- the previous release stored). The caller returns when a row came back. lock_timeout bounds the lock's wait (SQLSTATE
-- 55P03, answered 503): a statement_timeout set inside a function would not bound the running statement. The timeout
-- is set and the lock taken in one statement (a target list is evaluated in its order), the record read in a second:
-- every command pays these, so they are not a call of a further function. entitlement_status_change, the grant's and
-- the revoke's, runs the same two statements itself rather than call this.
create or replace function idempotency_stored(p_idem idempotency_call)
returns setof command_outcome language plpgsql volatile as $$
begin
  perform set_config('lock_timeout', p_idem.lock_timeout_ms::text, true), pg_advisory_xact_lock(p_idem.lock_key);
  return query
    select 'stored', k.request_hash, k.response_code, k.response_body, k.response_facts, k.expires_at
    from idempotency_keys k
    where k.caller = coalesce(p_idem.key_scope, p_idem.caller) and k.idem_key = p_idem.idem_key
      and k.expires_at > now();
end $$;
