// Retention: inclusive bounds, only PUBLISHED outbox rows, bounded batches.
import { expect, setDefaultTimeout, test } from "bun:test";
import {
  deleteExpiredIdempotencyKeys,
  deletePublishedOutboxEvents,
} from "../../src/entitlement/work/retention/queries.ts";
import { createRetentionWorker, runRetentionOnce } from "../../src/entitlement/work/retention/worker.ts";
import { createSql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { insertEvent } from "./outbox.helpers.ts";

// Real PostgreSQL and NATS on a loaded 2-core CI machine: waits are polled, but the whole test may take a while.
setDefaultTimeout(90_000);

const f = useTestDatabase("retention", { service: "entitlement", poolMax: 4, resetEach: true });
const now = new Date("2026-01-17T00:00:00.000Z");
const at = (seconds: number) => new Date(now.getTime() + seconds * 1000);
const DAY = 86_400_000;

async function insertKey(key: string, expiresAt: Date, caller = "") {
  await f.sql`
    insert into idempotency_keys (caller, idem_key, request_hash, response_code, response_body, expires_at)
    values (${caller}, ${key}, 'h', 200, '{}'::jsonb, ${expiresAt})`;
}
const keys = async () =>
  (await f.sql<{ idem_key: string }[]>`select idem_key from idempotency_keys order by 1`).map((r) => r.idem_key);
const events = async () =>
  (await f.sql<{ event_id: string }[]>`select event_id from outbox_events`).map((r) => r.event_id).sort();

test("expired idempotency keys go, expires_at = now included", async () => {
  await insertKey("past", at(-1));
  await insertKey("exactly-now", now);
  await insertKey("future", at(1));
  await insertKey("day", at(86_400), "caller-b");
  expect(await deleteExpiredIdempotencyKeys(f.sql, { now, limit: 1000 })).toBe(2);
  expect(await keys()).toEqual(["day", "future"]);
});

test("only PUBLISHED events older than the TTL go, the threshold included", async () => {
  const threshold = at(-86_400);
  const older = await insertEvent(f.sql, { status: "PUBLISHED", publishedAt: new Date(threshold.getTime() - 1000) });
  const atThreshold = await insertEvent(f.sql, { status: "PUBLISHED", publishedAt: threshold });
  const newer = await insertEvent(f.sql, { status: "PUBLISHED", publishedAt: new Date(threshold.getTime() + 1000) });
  const pending = await insertEvent(f.sql, { createdAt: at(-10 * 86_400) });
  const failed = await insertEvent(f.sql, { status: "FAILED", createdAt: at(-10 * 86_400), attemptCount: 10 });
  const inFlight = await insertEvent(f.sql, {
    status: "IN_FLIGHT",
    createdAt: at(-10 * 86_400),
    lockedBy: "x",
    leaseUntil: at(-9 * 86_400),
  });
  expect(await deletePublishedOutboxEvents(f.sql, { threshold, limit: 1000 })).toBe(2);
  expect(await events(), `${older} and ${atThreshold} deleted, the rest kept`).toEqual(
    [newer, pending, failed, inFlight].sort(),
  );
});

test("a pass deletes in bounded batches until nothing is left, with one `now` for both tables", async () => {
  for (let i = 0; i < 25; i++) await insertKey(`k${i}`, at(-i - 1));
  for (let i = 0; i < 23; i++)
    await insertEvent(f.sql, { status: "PUBLISHED", publishedAt: new Date(now.getTime() - DAY - i) });
  const keep = await insertEvent(f.sql, { status: "PUBLISHED", publishedAt: at(-60) });
  const deleted: number[] = [];
  const counting = createSql({ url: f.db.url, schema: "entitlement", max: 2, applicationName: "t" });
  const report = await runRetentionOnce({
    sql: new Proxy(counting, {
      apply(target, self, args) {
        // Awaiting a delete makes it run: record how many rows each one deleted. The other calls build its parts
        // (an identifier, a condition), which run only inside it.
        const query = Reflect.apply(target, self, args);
        const text: unknown = args[0]?.[0];
        if (typeof text === "string" && text.trimStart().startsWith("delete")) {
          query.then((r: { count: number }) => deleted.push(r.count));
        }
        return query;
      },
    }),
    log: silentLogger,
    now: () => now,
    settings: { cleanupIntervalMs: 1000, publishedTtlMs: DAY, batchSize: 10 },
  });
  await counting.end();
  expect(report).toEqual({ idempotencyKeys: 25, outboxEvents: 23 });
  expect(deleted, "no statement deletes more than the batch size").toEqual([10, 10, 5, 10, 10, 3]);
  expect(await keys()).toEqual([]);
  expect(await events()).toEqual([keep]);
});

test("the worker runs at start and every interval, and stops on abort", async () => {
  const worker = createRetentionWorker({
    sql: f.sql,
    log: silentLogger,
    now: () => new Date(),
    settings: { cleanupIntervalMs: 50, publishedTtlMs: DAY },
  });
  const stop = new AbortController();
  const loop = worker.run(stop.signal);
  await insertKey("soon-expired", new Date(Date.now() + 100));
  await insertKey("alive", new Date(Date.now() + DAY));
  await waitUntil(async () => (await keys()).length === 1, "the expired key deleted by a later pass");
  stop.abort();
  await loop;
  expect(await keys()).toEqual(["alive"]);
});

test("a run's batches take the oldest first and resume where the one before stopped", async () => {
  const threshold = at(-86_400);
  const published = [5, 1, 4, 2, 3].map((minutes) => new Date(threshold.getTime() - minutes * 60_000));
  for (const publishedAt of published) await insertEvent(f.sql, { status: "PUBLISHED", publishedAt });
  const resume: { from?: Date } = {};
  expect(await deletePublishedOutboxEvents(f.sql, { threshold, limit: 2, resume })).toBe(2);
  expect(resume.from, "the newer of the two oldest").toEqual(new Date(threshold.getTime() - 4 * 60_000));
  // A row older than the resume point is not looked for again within the run (a later run starts afresh).
  await insertEvent(f.sql, { status: "PUBLISHED", publishedAt: new Date(threshold.getTime() - 9 * 60_000) });
  expect(await deletePublishedOutboxEvents(f.sql, { threshold, limit: 10, resume })).toBe(3);
  expect(resume.from).toEqual(new Date(threshold.getTime() - 60_000));
  expect(await deletePublishedOutboxEvents(f.sql, { threshold, limit: 10 }), "a fresh run finds it").toBe(1);
});
