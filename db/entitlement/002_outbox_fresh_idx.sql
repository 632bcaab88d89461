-- The relay's claim of new events: an ordered scan of this index with `for update skip locked` stops after the batch
-- and steps over rows another lane or relay holds, so concurrent claims do not collide (src/entitlement/outbox/queries.ts).
create index outbox_fresh_idx on outbox_events (created_at) where status = 'PENDING' and next_retry_at is null;
