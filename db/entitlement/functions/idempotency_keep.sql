-- The last step of every idempotent command: the facts of its answer remembered under the key, and returned as the
-- command's row; the service makes the reply from them, now and on every replay. p_outcome is 'applied' or
-- 'state_conflict' (a refused change, remembered so a retry gets the same answer). p_code, the answer's status, is
-- stored for the previous release, which reads it from every record (its replay, its key conflict).
create or replace function idempotency_keep(p_outcome text, p_code int, p_facts jsonb, p_caller text,
                                            p_idem_key text, p_request_hash text, p_record_expires_at timestamptz)
returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_facts jsonb,
               reply_expires_at timestamptz)
language plpgsql volatile as $$
begin
  perform idempotency_remember(p_caller, p_idem_key, p_request_hash, p_code, null, p_facts, p_record_expires_at);
  return query select p_outcome, p_request_hash, p_code, null::jsonb, p_facts, p_record_expires_at;
end $$;
