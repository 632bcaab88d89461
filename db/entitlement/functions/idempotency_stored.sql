-- The opening of every command function: the key's lock and its live record, if any, as the command's row
-- ('stored': nothing is to be done). The caller returns when a row came back.
create or replace function idempotency_stored(p_idem idempotency_call)
returns setof command_outcome language plpgsql volatile as $$
begin
  return query select 'stored', o.request_hash, o.response_code, o.response_body, o.response_facts, o.expires_at
               from idempotency_lookup(coalesce(p_idem.key_scope, p_idem.caller), p_idem.idem_key, p_idem.lock_key,
                                       p_idem.lock_timeout_ms) o;
end $$;
