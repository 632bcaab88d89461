-- A record remembered under the key: the facts of its answer, its body (the previous release's), or both. An expired
-- record is overwritten; a live one cannot be there under the lock, after idempotency_lookup found none.
create or replace function idempotency_remember(p_caller text, p_idem_key text, p_request_hash text, p_code int,
                                                p_body jsonb, p_facts jsonb, p_expires_at timestamptz)
returns void language plpgsql volatile as $$
begin
  insert into idempotency_keys as k
    (caller, idem_key, request_hash, response_code, response_body, response_facts, expires_at)
  values (p_caller, p_idem_key, p_request_hash, p_code, p_body, p_facts, p_expires_at)
  on conflict (caller, idem_key) do update set
    request_hash = excluded.request_hash,
    response_code = excluded.response_code,
    response_body = excluded.response_body,
    response_facts = excluded.response_facts,
    expires_at = excluded.expires_at
  where k.expires_at <= now();
  if not found then
    raise exception 'idempotency invariant violated: a live record appeared under the lock';
  end if;
end $$;
