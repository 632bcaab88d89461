-- The previous release's opening of a command (idempotency_lookup without the facts), for the functions it calls and
-- their wrappers; the release after drops it.
create or replace function idempotency_open(p_caller text, p_idem_key text, p_lock_key bigint, p_lock_timeout_ms int)
returns table (request_hash text, response_code int, response_body jsonb, expires_at timestamptz)
language plpgsql volatile as $$
begin
  return query select l.request_hash, l.response_code, l.response_body, l.expires_at
               from idempotency_lookup(p_caller, p_idem_key, p_lock_key, p_lock_timeout_ms) l;
end $$;
