import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { requeueDlqNotification } from "../../src/notification/ops/queries.ts";
import { PermanentDeliveryError, type Sender } from "../../src/notification/work/channels/sender.ts";
import type { DeliveryDeps } from "../../src/notification/work/delivery/deps.ts";
import { handleFailure, moveToDlq } from "../../src/notification/work/delivery/failure.ts";
import { claimNotifications } from "../../src/notification/work/delivery/queries.ts";
import { createSentRecorder } from "../../src/notification/work/delivery/sent.ts";
import { createDeliveryWorker } from "../../src/notification/work/delivery/worker.ts";
import { createLogger } from "../../src/shared/logger.ts";
import { Waker } from "../../src/shared/runtime.ts";
import { countingSql } from "../support/counting-sql.ts";
import { useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { deliverBatch } from "./delivery.helpers.ts";
import { dlqCount as countDlq, deliveryDeps, notificationRow, notificationSql, seedNotification } from "./helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_delivery", { service: "notification", resetEach: true });

// An hour ahead of the wall clock, so rows seeded "now" are due.
const T0 = new Date(Math.floor(Date.now() / 1000) * 1000 + 3_600_000);
const at = (ms: number) => new Date(T0.getTime() + ms);

const deps = (overrides: Partial<DeliveryDeps> = {}) => deliveryDeps(f.sql, T0, overrides);
const dlqCount = (id: string) => countDlq(f.sql, id);

describe("DLQ", () => {
  test("a failing sender with max attempts 1 moves the notification to the DLQ at once", async () => {
    const id = await seedNotification(f.sql, { createdAt: at(-1) });
    const d = deps({
      maxAttempts: 1,
      send: async () => {
        throw new Error("simulated failure");
      },
    });
    expect(await deliverBatch(d)).toBe(1);
    expect(await notificationRow(f.sql, id)).toMatchObject({ status: "FAILED", attempt_count: 1, next_retry_at: null });
    expect(await dlqCount(id)).toBe(1);
    const [dlq] = await f.sql`select error_message, event_id from notification_dlq where notification_id = ${id}`;
    expect(dlq?.error_message).toBe("simulated failure");
    expect((await d.metrics.dlq.get()).values[0]?.value).toBe(1);
  });

  test("the DLQ insert is rolled back when another worker holds the lock", async () => {
    const id = await seedNotification(f.sql, { status: "PROCESSING", lockedBy: "other-worker", leaseUntil: at(1) });
    const moved = await moveToDlq(deps(), { notificationId: id, lockedBy: "worker-a", attemptCount: 3, error: "boom" });
    expect(moved).toBe(false);
    expect(await dlqCount(id)).toBe(0);
    expect(await notificationRow(f.sql, id)).toMatchObject({ status: "PROCESSING", locked_by: "other-worker" });
  });

  test("the error message is cut to the configured length", async () => {
    const id = await seedNotification(f.sql, { status: "PROCESSING", lockedBy: "worker-a", attemptCount: 3 });
    await handleFailure(
      deps({ errorMessageMaxLength: 10 }),
      {
        notificationId: id,
        eventId: crypto.randomUUID(),
        userId: "u",
        type: "EntitlementGranted",
        occurredAt: T0,
        payload: {},
        attemptCount: 3,
        createdAt: T0,
      },
      new Error("x".repeat(50)),
    );
    const [dlq] = await f.sql`select error_message from notification_dlq where notification_id = ${id}`;
    expect(dlq?.error_message).toBe("x".repeat(10));
  });

  test("a permanent error goes to FAILED + DLQ on the first attempt", async () => {
    const id = await seedNotification(f.sql);
    await deliverBatch(
      deps({
        send: async () => {
          throw new PermanentDeliveryError("gone");
        },
      }),
    );
    expect(await notificationRow(f.sql, id)).toMatchObject({ status: "FAILED", attempt_count: 1 });
    expect(await dlqCount(id)).toBe(1);
  });
});

describe("retries", () => {
  test("a failure before the last attempt schedules a retry with backoff and no DLQ row", async () => {
    const id = await seedNotification(f.sql);
    const d = deps({
      send: async () => {
        throw new Error("flaky");
      },
    });
    await deliverBatch(d);
    const row = await notificationRow(f.sql, id);
    expect(row).toMatchObject({ status: "PENDING", attempt_count: 1, locked_by: null, last_error: "flaky" });
    const delay = (row.next_retry_at?.getTime() ?? 0) - T0.getTime();
    expect(delay).toBeGreaterThanOrEqual(d.backoff.minMs);
    expect(delay).toBeLessThanOrEqual(Math.ceil(d.backoff.baseMs * d.backoff.jitterMax));
    expect(await dlqCount(id)).toBe(0);
  });

  test("an always-failing user ends FAILED with attempt_count = max attempts and one DLQ row", async () => {
    const id = await seedNotification(f.sql, { userId: "e2e-dlq-user-1" });
    let now = T0;
    let sends = 0;
    const d = deps({
      now: () => now,
      send: async () => {
        sends++;
        throw new Error("notification delivery failure injection matched userId=e2e-dlq-user-1");
      },
    });
    for (let round = 0; round < 10; round++) {
      await deliverBatch(d);
      now = new Date(now.getTime() + 60_000);
    }
    expect(sends).toBe(3);
    expect(await notificationRow(f.sql, id)).toMatchObject({ status: "FAILED", attempt_count: 3, next_retry_at: null });
    expect(await dlqCount(id)).toBe(1);
  });
});

describe("leases", () => {
  test("a worker killed mid-batch is taken over after the lease: nothing lost, nothing sent twice", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await seedNotification(f.sql, { createdAt: at(-10 + i) }));
    // worker-a claims and dies without finalizing anything.
    await claimNotifications(f.sql, { limit: 50, now: T0, leaseUntil: at(30_000), lockedBy: "worker-a" });
    const early = deps({ workerId: "worker-b", now: () => at(29_999) });
    expect(await deliverBatch(early)).toBe(0);
    const late = deps({ workerId: "worker-b", now: () => at(30_000) });
    expect(await deliverBatch(late)).toBe(5);
    expect(late.sent.sort()).toEqual([...ids].sort());
    const rows = await f.sql<
      { status: string; attempt_count: number }[]
    >`select status, attempt_count from notifications`;
    expect(rows.every((r) => r.status === "SENT" && r.attempt_count === 2)).toBe(true);
  });

  test("a worker that lost its lease changes nothing", async () => {
    const id = await seedNotification(f.sql);
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const slow: Sender = async () => gate;
    const a = deps({ workerId: "worker-a", leaseMs: 1000, send: slow });
    const running = deliverBatch(a);
    await waitUntil(
      async () => ((await notificationRow(f.sql, id)).locked_by === "worker-a" ? true : undefined),
      "claim",
    );
    const b = deps({ workerId: "worker-b", now: () => at(2000) });
    expect(await deliverBatch(b)).toBe(1);
    const after = await notificationRow(f.sql, id);
    release();
    await running;
    expect(await notificationRow(f.sql, id)).toEqual(after);
    expect(after).toMatchObject({ status: "SENT" });
  });

  test("a claim that is never finalized counts, so a poison row ends FAILED after max attempts", async () => {
    const id = await seedNotification(f.sql);
    for (let i = 0; i < 3; i++) {
      await claimNotifications(f.sql, {
        limit: 1,
        now: at(i * 60_000),
        leaseUntil: at(i * 60_000 + 1),
        lockedBy: `w${i}`,
      });
    }
    const d = deps({ now: () => at(10 * 60_000) });
    await deliverBatch(d);
    expect(d.sent).toEqual([]);
    expect(await notificationRow(f.sql, id)).toMatchObject({ status: "FAILED", attempt_count: 3 });
    expect(await dlqCount(id)).toBe(1);
  });

  test("markSent failing after a successful send is not a send failure", async () => {
    const id = await seedNotification(f.sql);
    const lines: string[] = [];
    const log = createLogger({ level: "info", service: "t", destination: { write: (l: string) => lines.push(l) } });
    const pool = notificationSql(f.db.url, 1);
    // The send succeeds, then the database goes away before the notification is marked SENT.
    const d = deps({ sql: pool, log, send: async () => void (await pool.end()) });
    expect(await deliverBatch(d)).toBe(1);
    const row = await notificationRow(f.sql, id);
    expect(row).toMatchObject({ status: "PROCESSING", attempt_count: 1, last_error: null, locked_by: "worker-a" });
    expect(await dlqCount(id)).toBe(0);
    expect(lines.some((l) => l.includes("marking it SENT failed"))).toBe(true);
    expect(lines.some((l) => l.includes("could not record the failed delivery"))).toBe(false);
  });
});

describe("metrics and worker loop", () => {
  test("records sent, e2e delay and backlog", async () => {
    await seedNotification(f.sql, { occurredAt: at(-2000) });
    for (let i = 0; i < 5; i++) await seedNotification(f.sql, { nextRetryAt: at(-1) });
    const waker = new Waker();
    const d = deps({ batchSize: 1, now: () => T0 });
    const stop = new AbortController();
    const worker = createDeliveryWorker({ ...d, waker, pollIntervalMs: 50 });
    const running = worker.run(stop.signal);
    await waitUntil(async () => (d.sent.length === 6 ? true : undefined), "all six sent");
    // The gauge is counted at most once per poll interval while claims come back full (batches of one here), so the
    // claim of the last row may leave an earlier count; the next claim, which finds nothing due, sets it to 0.
    await waitUntil(
      async () => (await d.metrics.backlog.get()).values[0]?.value === 0,
      "the backlog gauge to read 0 once nothing is due",
    );
    stop.abort();
    await running;
    const sent = (await d.metrics.delivery.get()).values.find((v) => v.labels.result === "sent");
    expect(sent?.value).toBe(6);
    expect((await d.metrics.e2eDelay.get()).values.find((v) => v.metricName?.endsWith("_count"))?.value).toBe(6);
    expect((await d.metrics.backlog.get()).values[0]?.value).toBe(0);
  });

  test("a wake-up delivers at once instead of waiting for the poll", async () => {
    const waker = new Waker();
    const d = deps({ now: () => new Date() });
    const stop = new AbortController();
    const running = createDeliveryWorker({ ...d, waker, pollIntervalMs: 600_000 }).run(stop.signal);
    await Bun.sleep(100);
    await seedNotification(f.sql, { createdAt: new Date(Date.now() - 1000) });
    waker.wake();
    await waitUntil(async () => (d.sent.length === 1 ? true : undefined), "the woken delivery", 20_000);
    stop.abort();
    await running;
  });

  test("at a steady trickle a notification costs about one statement: its claim, its SENT shared with others'", async () => {
    const { sql: counting, statements, reset } = countingSql(f.sql);
    const waker = new Waker();
    const d = deps({ sql: counting, now: () => new Date() });
    const stop = new AbortController();
    // Marks held longer than the notifications' spacing many times over, so that most share a statement.
    const worker = createDeliveryWorker({ ...d, waker, pollIntervalMs: 600_000, sentLingerMs: 300 });
    const running = worker.run(stop.signal);
    const ids: string[] = [];
    try {
      await Bun.sleep(100); // its first, empty rounds
      reset();
      for (let i = 0; i < 50; i++) {
        ids.push(await seedNotification(f.sql));
        waker.wake();
        await Bun.sleep(4);
      }
      await waitUntil(async () => (d.sent.length === ids.length ? true : undefined), "every notification sent");
    } finally {
      stop.abort();
      await running;
    }
    const [row] = await f.sql<{ n: number }[]>`
      select count(*)::int as n from notifications where notification_id = any(${ids}::uuid[]) and status = 'SENT'`;
    expect(row?.n, "every one marked SENT by the time the worker returns").toBe(ids.length);
    // A claim and a SENT update for each would be two statements a notification.
    expect(statements() / ids.length, "the worker's statements per notification").toBeLessThan(1.4);
  });

  test("a worker whose slots all wait for their SENT marks sends the marks at once, not after the linger", async () => {
    const d = deps({ now: () => new Date(), batchSize: 2 });
    const recordSent = createSentRecorder({ sql: f.sql, lockedBy: d.workerId, lingerMs: 600_000 });
    for (let i = 0; i < 20; i++) await seedNotification(f.sql);
    const stop = new AbortController();
    const worker = createDeliveryWorker({ ...d, recordSent, waker: new Waker(), pollIntervalMs: 600_000 });
    const running = worker.run(stop.signal);
    try {
      // Ten claims of two: with each pair's marks held for their ten-minute linger, this would never end.
      await waitUntil(async () => (d.sent.length === 20 ? true : undefined), "all twenty sent", 20_000);
    } finally {
      recordSent.flush();
      stop.abort();
      await running;
    }
  });

  test("an idle worker sleeps until the next retry and the next expiring lease, not for its idle interval", async () => {
    const waker = new Waker();
    const d = deps({ now: () => new Date() });
    const retry = await seedNotification(f.sql, { nextRetryAt: new Date(Date.now() + 700) });
    const leased = await seedNotification(f.sql, {
      status: "PROCESSING",
      lockedBy: "a-dead-worker",
      leaseUntil: new Date(Date.now() + 1_400),
    });
    const stop = new AbortController();
    // Neither a wake nor the idle poll (ten minutes) can deliver them: only the sleep until each falls due.
    const running = createDeliveryWorker({ ...d, waker, pollIntervalMs: 50, idlePollMs: 600_000 }).run(stop.signal);
    try {
      await waitUntil(
        async () => (d.sent.length === 2 ? true : undefined),
        "the retry and the lease taken over",
        20_000,
      );
      // Marked SENT after the send: by the next claim's statement, or when the mark's linger ends (delivery/sent.ts).
      const status = async (id: string) => (await notificationRow(f.sql, id))?.status;
      await waitUntil(async () => (await status(retry)) === "SENT" && (await status(leased)) === "SENT", "both SENT");
    } finally {
      stop.abort();
      await running;
    }
  });

  test("a requeue by another process wakes an idle worker at once", async () => {
    const waker = new Waker();
    const d = deps({ now: () => new Date() });
    const id = await seedNotification(f.sql, { status: "FAILED", attemptCount: 10, nextRetryAt: null });
    const stop = new AbortController();
    const running = createDeliveryWorker({ ...d, waker, pollIntervalMs: 50, idlePollMs: 600_000 }).run(stop.signal);
    try {
      await Bun.sleep(300); // idle: nothing due, the next look at the table ten minutes away
      expect(d.sent).toEqual([]);
      expect((await requeueDlqNotification(f.sql, id)).kind).toBe("requeued");
      await waitUntil(async () => (d.sent.length === 1 ? true : undefined), "the requeued notification", 20_000);
    } finally {
      stop.abort();
      await running;
    }
  });

  test("a hanging receiver holds only its own slot: later deliveries go on, at most batchSize in flight", async () => {
    const waker = new Waker();
    let release: () => void = () => {};
    const hung = new Promise<void>((resolve) => {
      release = resolve;
    });
    let inFlight = 0;
    let most = 0;
    const sent: string[] = [];
    const d = deps({
      now: () => new Date(),
      batchSize: 4,
      send: async (n) => {
        inFlight++;
        most = Math.max(most, inFlight);
        try {
          if (n.userId === "hung-receiver") await hung;
          else await Bun.sleep(5);
          sent.push(n.userId);
        } finally {
          inFlight--;
        }
      },
    });
    const stop = new AbortController();
    const running = createDeliveryWorker({ ...d, waker, pollIntervalMs: 600_000 }).run(stop.signal);
    try {
      await seedNotification(f.sql, { userId: "hung-receiver", createdAt: new Date(Date.now() - 1000) });
      waker.wake();
      await waitUntil(async () => (inFlight === 1 ? true : undefined), "the hanging delivery to start");
      for (let i = 0; i < 12; i++) await seedNotification(f.sql, { userId: `fast-${i}`, createdAt: new Date() });
      waker.wake();
      await waitUntil(
        async () => (sent.length === 12 ? true : undefined),
        "every later delivery, while the first still hangs",
        20_000,
      );
      expect(sent, "the hanging one has not finished").not.toContain("hung-receiver");
      expect(most, "never more than batchSize in flight").toBeLessThanOrEqual(4);
    } finally {
      release();
      stop.abort();
      await running;
    }
    expect(sent).toContain("hung-receiver");
  });
});
