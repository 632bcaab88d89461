-- A command function's Idempotency-Key arguments travel as one value (idempotency_call), and every command function
-- returns rows of one type (command_outcome). The command functions of this release (never deployed before it) take
-- the new value in place of their seven arguments, so their earlier signatures, and idempotency_keep's, are dropped
-- here; their texts are in db/entitlement/functions/. The previous release's functions keep their signatures.
create type idempotency_call as (
  caller text,                       -- who runs the command: the audit row's caller ('' without authentication)
  idem_key text,
  lock_key bigint,                   -- the advisory lock of the key
  request_hash text,
  record_expires_at timestamptz,
  lock_timeout_ms int,
  key_scope text                     -- the key space of idem_key when it is not the caller's (a bulk file's keys)
);

create type command_outcome as (
  outcome text,
  stored_hash text,
  reply_code int,
  reply_body jsonb,
  reply_facts jsonb,
  reply_expires_at timestamptz
);

drop function if exists grant_entitlements(text, text[], boolean, text, text, timestamptz, timestamptz, text, text,
  text, jsonb, jsonb, text, text, bigint, text, timestamptz, int, text);
drop function if exists revoke_entitlement(text, text, text, text, timestamptz, text, text, text, jsonb, jsonb, text,
  text, bigint, text, timestamptz, int, text);
drop function if exists extend_entitlement(text, text, text, text, timestamptz, timestamptz, text, text, text, jsonb,
  jsonb, text, text, bigint, text, timestamptz, int);
drop function if exists undo_extension(text, text, text, text, timestamptz, bigint, timestamptz, text, text, text,
  jsonb, jsonb, text, text, bigint, text, timestamptz, int);
drop function if exists reserve_points(uuid, text, bigint, timestamptz, text, timestamptz, text, text, text, bigint,
  text, timestamptz, int);
drop function if exists cancel_point_reservation(uuid, timestamptz, text, text, text, bigint, text, timestamptz, int);
drop function if exists idempotency_keep(text, int, jsonb, text, text, text, timestamptz);
