-- The key's advisory lock, then its live record, if any, with the facts of its answer (a record stored by this
-- release) or its body (one the previous release stored). Every idempotent command opens with this. lock_timeout
-- bounds the wait (SQLSTATE 55P03, answered 503): a statement_timeout set inside a function would not bound the
-- running statement.
create or replace function idempotency_lookup(p_caller text, p_idem_key text, p_lock_key bigint, p_lock_timeout_ms int)
returns table (request_hash text, response_code int, response_body jsonb, response_facts jsonb, expires_at timestamptz)
language plpgsql volatile as $$
begin
  perform set_config('lock_timeout', p_lock_timeout_ms::text, true);
  perform pg_advisory_xact_lock(p_lock_key);
  return query
    select k.request_hash, k.response_code, k.response_body, k.response_facts, k.expires_at
    from idempotency_keys k
    where k.caller = p_caller and k.idem_key = p_idem_key and k.expires_at > now();
end $$;
