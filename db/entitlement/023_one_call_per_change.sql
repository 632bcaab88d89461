-- A grant and a revoke are each one call of entitlement_status_change, which the service now calls itself: the two
-- PL/pgSQL functions that only handed it their arguments (grant_entitlements, revoke_entitlement) go. No release has
-- called them; the previous release's entitlement_grant and entitlement_revoke call entitlement_status_change too.
drop function if exists grant_entitlements(text, text[], boolean, text, text, timestamptz, timestamptz, text, text,
  text, jsonb, jsonb, idempotency_call);
drop function if exists revoke_entitlement(text, text, text, text, timestamptz, text, text, text, jsonb, jsonb,
  idempotency_call);
