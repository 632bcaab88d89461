-- The opening of every command function: the key's advisory lock, then its live record, if any, as the command's
-- outcome ('stored': nothing is to be done), with the facts of its answer (a record stored by this release) or its
-- body (one the previous release stored); an outcome of nulls when there is none. The caller returns the outcome
-- when it is 'stored'. lock_timeout bounds the lock's wait (SQLSTATE 55P03, answered 503): a statement_timeout set
-- inside a function would not bound the running statement. The timeout is set and the lock taken in one statement (a
-- target list is evaluated in its order), the record read in a second. It returns a value, not a set: a caller's
-- `v_out := idempotency_stored(p_idem)` is an expression, where a set would cost it a query and a tuplestore.
create or replace function idempotency_stored(p_idem idempotency_call)
returns command_outcome language plpgsql volatile as $$
declare
  v_out command_outcome;
begin
  perform set_config('lock_timeout', p_idem.lock_timeout_ms::text, true), pg_advisory_xact_lock(p_idem.lock_key);
  select 'stored', k.request_hash, k.response_code, k.response_body, k.response_facts, k.expires_at into v_out
  from idempotency_keys k
  where k.caller = coalesce(p_idem.key_scope, p_idem.caller) and k.idem_key = p_idem.idem_key
    and k.expires_at > now();
  return v_out;
end $$;
