// Pacing of pushes to one push service: its backlog goes out as fast as the service answers, not its per-service slots
// once a poll interval (a claim gives one service at most its free slots, far fewer than the loop's; a push that ends
// frees its service's slot and wakes the loop to claim again). The poll interval here is a minute, longer than the test
// may run: only those wakes can move the backlog. And a service whose pushes hang holds only its own slots: no wakes,
// so no claim after claim while the only work left is its own.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import webpush from "web-push";
import { upsertDevice } from "../../src/notification/features/push/queries.ts";
import { storeEvents } from "../../src/notification/intake/consumer/batch.ts";
import { createWebPushSender } from "../../src/notification/work/push/webpush.ts";
import { createPushWorker } from "../../src/notification/work/push/worker.ts";
import type { Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { Waker } from "../../src/shared/runtime.ts";
import { uniqueName, useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { startWebPushService, type WebPushService } from "../support/webpush-service.ts";
import { testMetrics } from "./helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("push_pacing", { service: "notification" });
const PER_SERVICE = 4;
let healthy: WebPushService;
let hanging: WebPushService;
const waker = new Waker();
const stop = new AbortController();
let running: Promise<void>;
let claims = 0;
const now = () => new Date();

/** The worker's connection, counting its claims (the statement that walks the services). */
function countingClaims(sql: Sql): Sql {
  return new Proxy(sql, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== "unsafe" || typeof value !== "function") return value;
      return (text: string, ...rest: unknown[]) => {
        if (text.includes("with recursive services")) claims++;
        return (value as (...a: unknown[]) => unknown).call(target, text, ...rest);
      };
    },
  });
}

beforeAll(() => {
  healthy = startWebPushService({ record: false });
  hanging = startWebPushService();
  const worker = createPushWorker({
    sql: countingClaims(f.sql),
    log: silentLogger,
    metrics: testMetrics().metrics,
    workerId: uniqueName("push"),
    waker,
    leaseMs: 60_000,
    maxInFlight: 400,
    perService: PER_SERVICE,
    pollIntervalMs: 60_000,
    idlePollMs: 60_000,
    now,
    maxAttempts: 5,
    backoff: { baseMs: 200, maxMs: 1_000, minMs: 100, exponentBase: 2, jitterMin: 1, jitterMax: 1 },
    errorMessageMaxLength: 500,
    senders: {
      webpush: createWebPushSender({
        now,
        defaultTtlSeconds: 3600,
        timeoutMs: 50_000,
        vapid: { ...webpush.generateVAPIDKeys(), subject: "mailto:o@example.com" },
        allowPrivate: true,
      }),
    },
  });
  running = worker.run(stop.signal);
});
afterAll(async () => {
  stop.abort();
  hanging.stop();
  await running;
  healthy.stop();
});

async function device(user: string, service: WebPushService) {
  const sub = service.subscribe();
  const { p256dh, auth } = sub.json.keys;
  const push = { platform: "webpush" as const, endpoint: sub.json.endpoint, p256dh, auth };
  await upsertDevice(f.sql, { deviceId: crypto.randomUUID(), userId: user, device: push, now: now() });
  return sub;
}

/** Stores `count` notifications for `user` in one statement and wakes the worker once. */
async function store(user: string, count: number) {
  const events = Array.from({ length: count }, () => ({
    eventId: crypto.randomUUID(),
    notifications: [{ userId: user, type: "EnergyFull", occurredAt: now().toISOString(), payload: { user_id: user } }],
  }));
  await storeEvents(f.sql, events as never, now());
  waker.wake();
}

const sentTo = async (user: string) => {
  const [row] = await f.sql<{ n: number }[]>`
    select count(*)::int as n from push_deliveries d join notifications n using (notification_id)
    where n.user_id = ${user} and d.status = 'SENT'`;
  return row?.n ?? 0;
};

test("a hanging service holds its own slots, a healthy one's backlog of 200 goes out without waiting for the poll", async () => {
  const stuck = uniqueName("stuck");
  const sub = await device(stuck, hanging);
  hanging.answer(sub.id, "hang");
  await store(stuck, 20);
  await waitUntil(() => hanging.requests.get(sub.id) === PER_SERVICE || undefined, "the hanging service's slots held");

  const user = uniqueName("busy");
  await device(user, healthy);
  const started = performance.now();
  await store(user, 200);
  // With one claim of PER_SERVICE pushes a poll interval, 200 would take 50 minutes; they take about a second here,
  // and the bound (30 s) is more than ten times that on a loaded machine.
  await waitUntil(async () => (await sentTo(user)) === 200 || undefined, "the healthy service's 200 pushes", 30_000);
  expect(performance.now() - started).toBeLessThan(30_000);
  expect(hanging.requests.get(sub.id), "the hanging service got no more than its slots").toBe(PER_SERVICE);
});

test("while the only work left is a hanging service's, the loop does not claim again and again", async () => {
  const before = claims;
  await Bun.sleep(1_000);
  expect(claims - before).toBeLessThanOrEqual(1);
});
