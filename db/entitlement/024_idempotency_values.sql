-- The opening and the closing every command shares (idempotency_stored, idempotency_keep) and the points commands'
-- applied end (point_recorded) return their one outcome as a value, no longer as a set: a PL/pgSQL function that
-- returns rows costs its caller a query, an executor and a tuplestore at every command, and a value is an
-- expression. PostgreSQL does not change a function's return type in place, so the three are dropped here; their
-- files create them again in this transaction, with the commands that call them. No release calls them itself: the
-- previous release's entry points call this release's commands.
drop function if exists idempotency_stored(idempotency_call);
drop function if exists idempotency_keep(idempotency_call, text, int, jsonb);
drop function if exists point_recorded(idempotency_call, text, point_reservations, timestamptz, text, jsonb, int, text);
