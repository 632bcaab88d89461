// The relay loop against real PostgreSQL and JetStream: LISTEN wake-up, several relays at once, the lease heartbeat,
// graceful stop, a relay that never dies, and the measured time from commit to stream append.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Publisher } from "../../src/entitlement/work/outbox/publisher.ts";
import { claimOutboxBatch } from "../../src/entitlement/work/outbox/queries.ts";
import { createSql } from "../../src/shared/db.ts";
import { countingSql } from "../support/counting-sql.ts";
import { waitUntil } from "../support/wait.ts";
import {
  countByStatus,
  failingFirst,
  insertEvent,
  insertEvents,
  makeRelay,
  metricValue,
  overlapCounting,
  readEvent,
  readStream,
  streamCount,
  useFixture,
} from "./outbox.helpers.ts";

// Real PostgreSQL and NATS on a loaded 2-core CI machine: waits are polled, but the whole test may take a while.
setDefaultTimeout(90_000);

const f = useFixture("loop");

/** Runs `relays` until the callback is done, then stops them and waits for their loops to return. */
async function running<T>(relays: { run: (s: AbortSignal) => Promise<void> }[], body: () => Promise<T>): Promise<T> {
  const stop = new AbortController();
  const loops = relays.map((r) => r.run(stop.signal));
  try {
    return await body();
  } finally {
    stop.abort();
    await Promise.all(loops);
  }
}

const delayed = (ms: number): Publisher => ({
  publish: async (...args) => {
    await Bun.sleep(ms);
    return f.js.publish(...args);
  },
});

describe("relay loop", () => {
  test("idle, it stops polling: a few statements over a second, not one per poll interval", async () => {
    const { sql: counting, statements } = countingSql(f.sql);
    const relay = makeRelay(f, { sql: counting, settings: { pollIntervalMs: 50, idlePollIntervalMs: 60_000 } });
    await running([relay], async () => {
      await Bun.sleep(1_500);
    });
    // Polling every 50 ms would be ~30 claims; idle, it is two empty passes, the exhausted-claims check and the
    // look for the next due time, then a sleep until a wake-up.
    expect(statements(), "statements of an idle relay in 1.5 s").toBeLessThan(8);
  });

  test("at a steady trickle an event costs about one statement: its claim, its mark shared with other events'", async () => {
    const { sql: counting, statements, reset } = countingSql(f.sql);
    // Marks held longer than the events' spacing many times over, so that most share a statement.
    const relay = makeRelay(f, { sql: counting, settings: { pollIntervalMs: 60_000, finalizeLingerMs: 300 } });
    const events = 100;
    const ids = await running([relay], async () => {
      await Bun.sleep(200); // the first (empty) passes and the LISTEN
      reset();
      const ids: string[] = [];
      for (let i = 0; i < events; i++) {
        ids.push(await insertEvent(f.sql));
        await Bun.sleep(8); // longer than the wake-ups' debounce (5 ms): a wake-up, and a batch, for each event
      }
      await waitUntil(async () => (await countByStatus(f.sql)).PUBLISHED === events, "every event PUBLISHED");
      return ids;
    });
    expect(new Set((await readStream(f.jsm, f.stream)).map((m) => m.msgId))).toEqual(new Set(ids));
    // A claim, then a finalize whose chained claim finds nothing, for each event would be about two statements an
    // event; marks that wait for each other make it about one.
    expect(statements() / events, "the relay's statements per event").toBeLessThan(1.5);
  });

  test("idle, it still wakes at the next retry time, long before its idle interval", async () => {
    const js = failingFirst(f.js, 1, () => new Error("nats api error"));
    const relay = makeRelay(f, { js, settings: { pollIntervalMs: 50, idlePollIntervalMs: 60_000 } });
    await running([relay], async () => {
      const id = await insertEvent(f.sql);
      const failed = async () => {
        const row = await readEvent(f.sql, id);
        return row.status === "PENDING" && row.next_retry_at ? row.next_retry_at.getTime() : undefined;
      };
      let retryAt = 0;
      await waitUntil(async () => {
        retryAt = (await failed()) ?? 0;
        return retryAt > 0;
      }, "the first attempt to fail");
      await waitUntil(async () => (await readEvent(f.sql, id)).status === "PUBLISHED", "the retry", 20_000);
      const publishedAt = (await readEvent(f.sql, id)).published_at?.getTime() ?? 0;
      expect(publishedAt - retryAt, "published soon after its retry time, not after 60 s").toBeLessThan(15_000);
    });
  });

  test("a committed event wakes the relay through LISTEN, long before the 60 s poll", async () => {
    const relay = makeRelay(f, { settings: { pollIntervalMs: 60_000 } });
    await running([relay], async () => {
      await Bun.sleep(200); // let the first (empty) pass and the LISTEN start
      const started = Date.now();
      const id = await insertEvent(f.sql);
      await waitUntil(async () => (await readEvent(f.sql, id)).status === "PUBLISHED", "published", 15_000);
      expect(Date.now() - started, "woken by NOTIFY, not by the 60 s poll").toBeLessThan(15_000);
    });
  });

  test("two relays draining 500 events put each in the stream exactly once", async () => {
    const a = makeRelay(f, { settings: { pollIntervalMs: 200 } });
    const b = makeRelay(f, { settings: { pollIntervalMs: 200 } });
    const ids = await running([a, b], async () => {
      const ids = await insertEvents(f.sql, 500);
      await waitUntil(async () => (await countByStatus(f.sql)).PUBLISHED === 500, "all 500 PUBLISHED", 60_000);
      return ids;
    });
    const messages = await readStream(f.jsm, f.stream);
    expect(messages).toHaveLength(500);
    expect(new Set(messages.map((m) => m.msgId)), "every event exactly once").toEqual(new Set(ids));
    const [{ max } = { max: 0 }] = await f.sql<
      { max: number }[]
    >`select max(attempt_count)::int as max from outbox_events`;
    expect(max, "no event needed a second attempt").toBe(1);
    const byA = (await metricValue(a.registry, "entitlement_outbox_publish_total", { result: "published" })) ?? 0;
    const byB = (await metricValue(b.registry, "entitlement_outbox_publish_total", { result: "published" })) ?? 0;
    expect(byA + byB).toBe(500);
  });

  test("the heartbeat extends the lease of a batch still in flight, so no other relay takes it over", async () => {
    const leaseMs = 1_000;
    const slow = makeRelay(f, { js: delayed(3_000), settings: { leaseMs, pollIntervalMs: 60_000 } });
    const other = makeRelay(f, { settings: { leaseMs } });
    const id = await insertEvent(f.sql);
    const claimedAt = Date.now();
    const batch = slow.runOnce();
    await waitUntil(
      async () => ((await readEvent(f.sql, id)).lease_until?.getTime() ?? 0) > claimedAt + leaseMs + 200,
      "lease pushed past the original lease",
    );
    await waitUntil(() => Date.now() > claimedAt + leaseMs + 300, "original lease over");
    expect((await other.runOnce()).claimed, "the live batch keeps its lease").toBe(0);
    expect(await batch).toMatchObject({ published: 1, lost: 0 });
    expect(await readEvent(f.sql, id)).toMatchObject({ status: "PUBLISHED", attempt_count: 1 });
    expect(await streamCount(f.jsm, f.stream)).toBe(1);
  });

  test("on abort the relay finishes the batch in flight, then returns", async () => {
    const relay = makeRelay(f, { js: delayed(500) });
    const id = await insertEvent(f.sql);
    const stop = new AbortController();
    const loop = relay.run(stop.signal);
    await waitUntil(async () => (await readEvent(f.sql, id)).status === "IN_FLIGHT", "claimed");
    stop.abort();
    await loop;
    expect((await readEvent(f.sql, id)).status, "the batch was finalized before run() returned").toBe("PUBLISHED");
  });

  test("with concurrency 3 one relay keeps three batches in flight, never more, and publishes each event once", async () => {
    const counting = overlapCounting(f.js, 300);
    const relay = makeRelay(f, { js: counting, settings: { batchSize: 10, concurrency: 3, pollIntervalMs: 60_000 } });
    const ids = await insertEvents(f.sql, 100);
    await running([relay], () =>
      waitUntil(async () => (await countByStatus(f.sql)).PUBLISHED === 100, "all 100 PUBLISHED", 30_000),
    );
    expect(counting.most, "publishes of more than two batches overlapped").toBeGreaterThan(20);
    expect(counting.most, "at most three batches of 10 in flight").toBeLessThanOrEqual(30);
    const messages = await readStream(f.jsm, f.stream);
    expect(new Set(messages.map((m) => m.msgId)), "every event exactly once").toEqual(new Set(ids));
    expect(messages).toHaveLength(100);
  });

  test("with concurrency 1 batches stay strictly sequential", async () => {
    const counting = overlapCounting(f.js, 50);
    const relay = makeRelay(f, { js: counting, settings: { batchSize: 10, concurrency: 1, pollIntervalMs: 60_000 } });
    await insertEvents(f.sql, 40);
    await running([relay], () =>
      waitUntil(async () => (await countByStatus(f.sql)).PUBLISHED === 40, "all 40 PUBLISHED", 30_000),
    );
    expect(counting.most, "one batch of 10 at a time").toBeLessThanOrEqual(10);
  });

  test("in a backlog batches double up to the maximum size, and the next trickle is claimed at the configured size", async () => {
    // publishEvents calls publish for a whole batch in one turn of the event loop: a burst is one batch.
    const bursts: number[] = [];
    let burst = 0;
    const counting: Publisher = {
      publish: (...args) => {
        if (burst++ === 0)
          setTimeout(() => {
            bursts.push(burst);
            burst = 0;
          }, 0);
        return f.js.publish(...args);
      },
    };
    const relay = makeRelay(f, {
      js: counting,
      settings: { batchSize: 10, maxBatchSize: 80, concurrency: 1, pollIntervalMs: 60_000 },
    });
    await insertEvents(f.sql, 300);
    await running([relay], async () => {
      await waitUntil(async () => (await countByStatus(f.sql)).PUBLISHED === 300, "all 300 PUBLISHED", 30_000);
      await insertEvents(f.sql, 3);
      await waitUntil(async () => (await countByStatus(f.sql)).PUBLISHED === 303, "the trickle PUBLISHED", 30_000);
    });
    expect(bursts.slice(0, 4), "each full claim doubles the next one").toEqual([10, 20, 40, 80]);
    expect(Math.max(...bursts), "never past the maximum size").toBe(80);
    expect(bursts.reduce((a, b) => a + b, 0)).toBe(303);
    expect(bursts.at(-1), "after the backlog, the configured size again").toBeLessThanOrEqual(10);
  });

  test("an event that commits late, older than a chain's cursor, is still published, once", async () => {
    let publishes = 0;
    let late: string | undefined;
    const lateCommit: Publisher = {
      publish: async (...args) => {
        // In the middle of a chain of full claims: a transaction that began before the backlog's newest events commits.
        if (++publishes === 25) late = await insertEvent(f.sql, { createdAt: new Date(Date.now() - 60_000) });
        return f.js.publish(...args);
      },
    };
    const relay = makeRelay(f, {
      js: lateCommit,
      settings: { batchSize: 10, maxBatchSize: 10, concurrency: 1, pollIntervalMs: 60_000 },
    });
    const backlog = await insertEvents(f.sql, 100);
    await running([relay], () =>
      waitUntil(async () => (await countByStatus(f.sql)).PUBLISHED === 101, "the backlog and the late event", 30_000),
    );
    const stored = (await readStream(f.jsm, f.stream)).map((m) => m.headers["Nats-Msg-Id"]);
    expect(
      stored.filter((id) => id === late),
      "the late event reaches the stream once",
    ).toHaveLength(1);
    expect(new Set(stored).size, "and every event of the backlog once").toBe(backlog.length + 1);
  });

  test("on abort a concurrent relay finishes every batch in flight, then returns", async () => {
    const relay = makeRelay(f, { js: delayed(500), settings: { batchSize: 10, concurrency: 3 } });
    await insertEvents(f.sql, 30);
    const stop = new AbortController();
    const loop = relay.run(stop.signal);
    await waitUntil(async () => (await countByStatus(f.sql)).IN_FLIGHT === 30, "three batches claimed");
    stop.abort();
    await loop;
    expect(await countByStatus(f.sql), "every claimed batch finalized before run() returned").toMatchObject({
      PUBLISHED: 30,
    });
  });

  test("a slow full claim makes the relay refresh the planner statistics, once per interval", async () => {
    let analyzes = 0;
    // The claim answers 30 ms late (as with a plan that sorts the whole backlog); every other statement is untouched.
    const slowClaims = new Proxy(f.sql, {
      apply(target, self, args: unknown[]) {
        const text = (args[0] as { raw?: string[] } | undefined)?.raw?.join("") ?? "";
        if (text.includes("analyze_outbox_events()")) analyzes += 1;
        const query = Reflect.apply(target, self, args);
        return text.includes("with fresh as") ? Bun.sleep(30).then(() => query) : query;
      },
    });
    const relay = makeRelay(f, { sql: slowClaims, settings: { batchSize: 10, concurrency: 2 } });
    await insertEvents(f.sql, 100);
    await running([relay], () =>
      waitUntil(async () => (await countByStatus(f.sql)).PUBLISHED === 100, "all 100 PUBLISHED", 30_000),
    );
    expect(analyzes, "one analyze for a run of slow claims within a minute").toBe(1);
  });

  test("a relay whose database is gone keeps running, counts the failures, and stops on abort", async () => {
    const u = new URL(f.db.url);
    u.pathname = "/no_such_database";
    const broken = createSql({ url: u.toString(), schema: "entitlement", max: 1, applicationName: "broken" });
    const relay = makeRelay(f, { sql: broken, settings: { pollIntervalMs: 50 } });
    await running([relay], async () => {
      await waitUntil(
        async () => ((await metricValue(relay.registry, "entitlement_outbox_relay_errors_total")) ?? 0) >= 3,
        "three failed passes",
      );
    });
    await broken.end();
  });

  test("a relay process killed mid-batch loses nothing: another relay takes over after the lease", async () => {
    const ids = await insertEvents(f.sql, 20);
    // The child claims a batch, publishes nothing for a minute, and is killed with SIGKILL meanwhile.
    const child = Bun.spawn(
      [
        process.execPath,
        "-e",
        `
        import { jetstream } from "@nats-io/jetstream";
        import { connect } from "@nats-io/transport-node";
        import { createSql } from "${import.meta.dir}/../../src/shared/db.ts";
        import { makeRelay } from "${import.meta.dir}/outbox.helpers.ts";
        const sql = createSql({ url: ${JSON.stringify(f.db.url)}, schema: "entitlement", max: 2, applicationName: "child" });
        const nc = await connect({ servers: ${JSON.stringify(f.nc.getServer())} });
        const fx = { sql, js: jetstream(nc), subject: ${JSON.stringify(f.subject)} };
        const slow = { publish: async (...a) => { await Bun.sleep(60_000); return fx.js.publish(...a); } };
        await makeRelay(fx, { js: slow, lockedBy: "doomed-child", settings: { leaseMs: 2_000 } }).runOnce();
        `,
      ],
      { cwd: import.meta.dir, stdout: "ignore", stderr: "inherit" },
    );
    await waitUntil(
      async () => (await f.sql`select 1 from outbox_events where locked_by = 'doomed-child'`).length === 20,
      "the child claimed the batch",
    );
    child.kill("SIGKILL");
    await child.exited;
    const survivor = makeRelay(f, { settings: { leaseMs: 2_000, pollIntervalMs: 100 } });
    await running([survivor], () =>
      waitUntil(async () => (await countByStatus(f.sql)).PUBLISHED === 20, "published by the survivor after the lease"),
    );
    const messages = await readStream(f.jsm, f.stream);
    expect(new Set(messages.map((m) => m.msgId)), "every event once").toEqual(new Set(ids));
    expect(messages).toHaveLength(20);
    const attempts = await f.sql<{ n: number }[]>`select distinct attempt_count as n from outbox_events`;
    expect(
      attempts.map((r) => r.n),
      "the dead claim counted as an attempt",
    ).toEqual([2]);
  });

  test("a lease-expired claim that used the last attempt ends FAILED instead of looping", async () => {
    const id = await insertEvent(f.sql);
    await claimOutboxBatch(f.sql, {
      now: new Date(),
      leaseUntil: new Date(),
      lockedBy: "dead",
      limit: 1,
      maxAttempts: 1,
    });
    const relay = makeRelay(f, { settings: { maxAttempts: 1, pollIntervalMs: 50 } });
    await running([relay], () =>
      waitUntil(async () => (await readEvent(f.sql, id)).status === "FAILED", "FAILED after its only attempt"),
    );
    expect(await streamCount(f.jsm, f.stream)).toBe(0);
  });
});

/** Microseconds since the epoch, from JetStream's nanosecond ISO timestamp or from the high-resolution clock. */
const isoMicros = (iso: string) => {
  const [, whole, fraction = ""] = /^(.*?:\d{2})(?:\.(\d+))?Z$/.exec(iso) ?? [];
  return Date.parse(`${whole}Z`) * 1000 + Number(fraction.padEnd(6, "0").slice(0, 6));
};
const nowMicros = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

describe("commit → stream append latency", () => {
  test("200 events committed one by one reach the stream within the LISTEN round trip", async () => {
    const relay = makeRelay(f, { settings: { pollIntervalMs: 1_000 } });
    const committed = new Map<string, { sent: number; returned: number }>();
    await running([relay], async () => {
      await Bun.sleep(200);
      for (let i = 0; i < 200; i++) {
        const sent = nowMicros();
        const id = await insertEvent(f.sql);
        committed.set(id, { sent, returned: nowMicros() });
        await Bun.sleep(5);
      }
      await waitUntil(async () => (await streamCount(f.jsm, f.stream)) === 200, "200 events in the stream", 60_000);
    });
    const messages = await readStream(f.jsm, f.stream);
    const quantiles = (key: "sent" | "returned") => {
      const lat = messages
        .map((m) => (isoMicros(m.timestamp) - (committed.get(m.msgId)?.[key] ?? Number.NaN)) / 1000)
        .sort((x, y) => x - y);
      const pick = (q: number) => lat[Math.min(lat.length - 1, Math.floor(q * lat.length))] ?? Number.NaN;
      return { median: pick(0.5), p99: pick(0.99), max: pick(1) };
    };
    const fromReturn = quantiles("returned");
    const fromSend = quantiles("sent");
    const fmt = (q: { median: number; p99: number; max: number }) =>
      `median ${q.median.toFixed(2)} ms, p99 ${q.p99.toFixed(2)} ms, max ${q.max.toFixed(2)} ms`;
    console.log(`commit→stream append, 200 events, from the commit's return: ${fmt(fromReturn)}`);
    console.log(`commit→stream append, 200 events, from the insert's start: ${fmt(fromSend)}`);
    expect(messages).toHaveLength(200);
    // Not a speed assertion (CI machines vary); only that typical events did not wait for the safety-net poll.
    expect(fromSend.median, "typical events are woken by NOTIFY, not by the poll").toBeLessThan(1_000);
  });
});
