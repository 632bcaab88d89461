-- The last step of every idempotent command: the facts of its answer remembered under the key, and returned as the
-- command's outcome (a value: the caller's `return next idempotency_keep(…)`); the service makes the reply from them,
-- now and on every replay. p_outcome is 'applied' or 'state_conflict' (a refused change, remembered so a retry gets
-- the same answer). p_code, the answer's status, is stored for the previous release, which reads it from every
-- record (its replay, its key conflict).
create or replace function idempotency_keep(p_idem idempotency_call, p_outcome text, p_code int, p_facts jsonb)
returns command_outcome language plpgsql volatile as $$
begin
  perform idempotency_remember(coalesce(p_idem.key_scope, p_idem.caller), p_idem.idem_key, p_idem.request_hash, p_code,
                               null, p_facts, p_idem.record_expires_at);
  return row(p_outcome, p_idem.request_hash, p_code, null, p_facts, p_idem.record_expires_at)::command_outcome;
end $$;
