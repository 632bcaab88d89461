-- The key's advisory lock, then its live record, if any, as the previous release's opening of a command
-- (idempotency_open) reads it: idempotency_stored with the key space the caller's. The release after drops it.
create or replace function idempotency_lookup(p_caller text, p_idem_key text, p_lock_key bigint, p_lock_timeout_ms int)
returns table (request_hash text, response_code int, response_body jsonb, response_facts jsonb, expires_at timestamptz)
language plpgsql volatile as $$
begin
  return query
    select s.stored_hash, s.reply_code, s.reply_body, s.reply_facts, s.reply_expires_at
    from idempotency_stored(row(p_caller, p_idem_key, p_lock_key, null, null, p_lock_timeout_ms, null)::idempotency_call) s
    where s.outcome is not null;
end $$;
