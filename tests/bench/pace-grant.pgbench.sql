-- One grant at the database's pace (pace-schema.sql): the key's advisory lock and the lookup of its record, then the
-- entitlement upsert, its audit row, its outbox row and the idempotency record in one statement, in one transaction,
-- on fresh keys. The yardstick of the least a grant must write, not the service's own call (grant-call.pgbench.sql).
\set u random(1, 10000000)
\set s random(1, 50)
\set k random(1, 2000000000)
BEGIN;
SELECT pg_advisory_xact_lock(:k), (SELECT request_hash FROM idempotency_keys WHERE idem_key = 'k' || :k AND expires_at > now());
WITH e AS (INSERT INTO entitlements (user_id, sku, status, version) VALUES ('u' || :u, 'sku' || :s, 'ACTIVE', 0) ON CONFLICT (user_id, sku) DO UPDATE SET status='ACTIVE', version = entitlements.version + 1, updated_at = now() WHERE entitlements.status <> 'ACTIVE' RETURNING version, updated_at),
 a AS (INSERT INTO entitlement_audit (user_id, sku, action, source, source_id, request_id, detail) SELECT 'u' || :u, 'sku' || :s, 'GRANT', 'purchase', 'p' || :k, 'k' || :k, '{"user_id":"u","stock_keeping_unit":"s","reason":"purchase","purchase_id":"p"}'::jsonb FROM e),
 o AS (INSERT INTO outbox_events (event_id, event_type, aggregate_key, payload) SELECT gen_random_uuid(), 'EntitlementGranted', 'u' || :u || ':sku' || :s, '{"event_id":"x","event_type":"EntitlementGranted","user_id":"u","stock_keeping_unit":"s","source":"purchase","source_id":"p","version":0,"trace_id":"t"}'::jsonb FROM e),
 i AS (INSERT INTO idempotency_keys (idem_key, request_hash, response_status, response_body, expires_at) VALUES ('k' || :k, 'h', 200, '{"user_id":"u","stock_keeping_unit":"s","status":"ACTIVE","version":0,"updated_at":"2026-01-01T00:00:00Z"}', now() + interval '24 hours') ON CONFLICT (idem_key) DO UPDATE SET request_hash = excluded.request_hash WHERE idempotency_keys.expires_at <= now())
SELECT * FROM e;
COMMIT;
