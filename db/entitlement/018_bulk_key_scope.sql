-- A grant's and a revoke's Idempotency-Key may live in a key space other than the caller's: a bulk file's keys are
-- the file's, whoever applies it, while the audit row keeps who did. entitlement_grant and entitlement_revoke take a
-- last argument, p_key_scope (default null: the caller's key space, as before), in db/entitlement/functions/. A new
-- argument makes a new function beside the old one, and a call by name that both accept would be ambiguous, so the
-- old ones go here; the previous release's calls name only the old arguments, which the new functions take as they
-- were.
drop function if exists entitlement_grant(text, text[], text, text, timestamptz, timestamptz, text, text, text, jsonb,
  jsonb, jsonb, jsonb, text, text, bigint, text, timestamptz, int);
drop function if exists entitlement_revoke(text, text, text, text, timestamptz, text, text, text, jsonb, jsonb, jsonb,
  jsonb, text, text, bigint, text, timestamptz, int);
