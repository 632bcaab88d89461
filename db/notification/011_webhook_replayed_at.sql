-- Which replay request last queued each endpoint delivery, and when. The same replay asked for again soon after (a
-- retried call: the same window and only_failed) leaves alone what it queued within the last few minutes, even what has
-- been sent since, so it queues each notification once (outbound/endpoints/replay-queries.ts); another replay queues
-- as before. Nullable without a default: adding them rewrites nothing, and the previous release, which neither reads
-- nor writes them, goes on replaying during a rolling upgrade (its replays leave them null: "not recently replayed").
alter table webhook_deliveries add column replay_key text, add column replayed_at timestamptz;
