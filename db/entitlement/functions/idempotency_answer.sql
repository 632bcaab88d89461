-- The last step of every idempotent command: the reply the service made ({code, body}, completed by the command with
-- what only the database knows) remembered under the key, and returned as the command's row. p_outcome is
-- 'applied' or 'state_conflict' (a refused transition, remembered so a retry gets the same answer).
create or replace function idempotency_answer(p_outcome text, p_reply jsonb, p_caller text, p_idem_key text,
                                              p_request_hash text, p_record_expires_at timestamptz)
returns table (outcome text, stored_hash text, reply_code int, reply_body jsonb, reply_expires_at timestamptz)
language plpgsql volatile as $$
begin
  perform idempotency_store(p_caller, p_idem_key, p_request_hash, (p_reply ->> 'code')::int, p_reply -> 'body',
                            p_record_expires_at);
  return query select p_outcome, p_request_hash, (p_reply ->> 'code')::int, p_reply -> 'body', p_record_expires_at;
end $$;
