-- The reply remembered under the key. An expired record is overwritten; a live one cannot be there under the lock,
-- after idempotency_open found none.
create or replace function idempotency_store(p_caller text, p_idem_key text, p_request_hash text, p_code int,
                                             p_body jsonb, p_expires_at timestamptz)
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
