-- One write path. Every change of an entitlement (a grant, a revoke, a bundle grant, an extension, the scheduler's
-- expiry) and every points command became one call of one server-side function: one statement, one round trip. The
-- functions this migration introduced (idempotency_open, idempotency_store, api_instant, entitlement_change,
-- point_reservation_reply, point_command) now live one per file in db/entitlement/functions/, applied after the
-- numbered migrations; what remains here is the drop of the function they replaced.

drop function entitlement_command(text, text, text, bigint, text, text, text, text, text, timestamptz, timestamptz,
  timestamptz, int, uuid, jsonb, text, uuid, text, text, jsonb, text, jsonb, jsonb);
