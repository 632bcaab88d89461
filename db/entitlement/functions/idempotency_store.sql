-- A reply body remembered under the key, as the previous release's functions store it (idempotency_remember without
-- facts); the release after drops it.
create or replace function idempotency_store(p_caller text, p_idem_key text, p_request_hash text, p_code int,
                                             p_body jsonb, p_expires_at timestamptz)
returns void language plpgsql volatile as $$
begin
  perform idempotency_remember(p_caller, p_idem_key, p_request_hash, p_code, p_body, null, p_expires_at);
end $$;
