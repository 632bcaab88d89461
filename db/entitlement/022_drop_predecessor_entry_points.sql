-- The entry points of the release before the previous one (entitlement_change, point_command) were kept only for its
-- replicas; the previous release calls neither (it calls the functions they hand each action to), so no replica
-- that can still run beside this release needs them. Their files are gone from db/entitlement/functions/.
drop function if exists entitlement_change(text, text, text[], boolean, text, text, timestamptz, timestamptz, text,
  text, text, jsonb, jsonb, jsonb, text, text, bigint, text, timestamptz, int, text);
drop function if exists point_command(text, uuid, text, bigint, timestamptz, text, timestamptz, text, text, text,
  bigint, text, timestamptz, int);
