// The endpoint worker's statements each handle many deliveries: one claim takes every endpoint's share of its backlog
// (and no more), one finalize records a group whose deliveries ended differently, each by its own outcome.
import { expect, setDefaultTimeout, test } from "bun:test";
import {
  claimDeliveries,
  type DeliveryOutcome,
  finalizeDeliveries,
} from "../../src/notification/work/endpoints/delivery-queries.ts";
import { useTestDatabase } from "../support/infra.ts";
import { endpointApp, startReceiver, storeNotifications } from "./endpoints.helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_endpoints_batch", { service: "notification", resetEach: true });
const receiver = startReceiver();

async function twoEndpoints(): Promise<[string, string]> {
  const { call } = endpointApp(f.sql);
  const a = await call("POST", "/v1/webhook-endpoints", { url: receiver.url });
  const b = await call("POST", "/v1/webhook-endpoints", { url: receiver.url });
  return [a.body.endpoint_id, b.body.endpoint_id];
}

const lease = (now: Date) => new Date(now.getTime() + 60_000);

test("one claim takes each endpoint's offered slots and leases every delivery it took", async () => {
  const [a, b] = await twoEndpoints();
  const ids = await storeNotifications(
    f.sql,
    Array.from({ length: 6 }, () => ({})),
  );
  const now = new Date(Date.now() + 1_000);
  const claimed = await claimDeliveries(f.sql, {
    now,
    leaseUntil: lease(now),
    lockedBy: "w1",
    limit: 100,
    perKey: 4,
    free: [{ key: a, free: 2 }],
  });
  const of = (endpointId: string) => claimed.filter((c) => c.endpointId === endpointId).map((c) => c.notificationId);
  expect(of(a), "the slots offered to a: 2").toHaveLength(2);
  expect(of(b), "b, with nothing in flight: perKey").toHaveLength(4);
  expect(new Set(of(b)).size).toBe(4);
  for (const c of claimed) expect(ids).toContain(c.notificationId);
  expect(claimed.every((c) => c.attemptCount === 1 && c.notification?.type === "EntitlementGranted")).toBe(true);
  const rows = await f.sql<{ endpoint_id: string; n: number; lease: boolean }[]>`
    select endpoint_id, count(*)::int as n, bool_and(next_attempt_at = ${lease(now)}) as lease
    from webhook_deliveries where status = 'PROCESSING' and locked_by = 'w1' group by endpoint_id order by n`;
  expect([...rows]).toEqual([
    { endpoint_id: a, n: 2, lease: true },
    { endpoint_id: b, n: 4, lease: true },
  ]);
  const again = await claimDeliveries(f.sql, {
    now,
    leaseUntil: lease(now),
    lockedBy: "w2",
    limit: 3,
    perKey: 4,
    free: [],
  });
  expect(again, "the limit bounds the whole claim; what was held is not taken again").toHaveLength(3);
  const held = new Set(claimed.map((c) => `${c.endpointId}/${c.notificationId}`));
  expect(again.some((c) => held.has(`${c.endpointId}/${c.notificationId}`))).toBe(false);
});

test("one finalize records sent, retried, failed, unattempted and lost deliveries each by its own outcome", async () => {
  const [a, b] = await twoEndpoints();
  await storeNotifications(
    f.sql,
    Array.from({ length: 3 }, () => ({})),
  );
  const now = new Date(Date.now() + 1_000);
  const claim = { now, leaseUntil: lease(now), limit: 100, perKey: 8, free: [] };
  const mine = await claimDeliveries(f.sql, { ...claim, lockedBy: "w1" });
  const [a1, a2, a3] = mine.filter((c) => c.endpointId === a);
  const [b1, b2, b3] = mine.filter((c) => c.endpointId === b);
  if (!a1 || !a2 || !a3 || !b1 || !b2 || !b3) throw new Error("expected three deliveries per endpoint");
  // b3's lease went to another worker: its outcome from w1 must change nothing.
  await f.sql`update webhook_deliveries set locked_by = 'w2'
    where endpoint_id = ${b3.endpointId} and notification_id = ${b3.notificationId}`;
  const at = new Date();
  const retryAt = new Date(at.getTime() + 30_000);
  const outcome = (d: typeof a1, o: Partial<DeliveryOutcome>): DeliveryOutcome => ({
    endpointId: d.endpointId,
    notificationId: d.notificationId,
    attempt: d.attemptCount,
    at,
    status: "SENT",
    nextAttemptAt: null,
    error: null,
    statusCode: 204,
    durationMs: 3,
    excerpt: "",
    endpointFault: true,
    ...o,
  });
  const done = await finalizeDeliveries(f.sql, {
    lockedBy: "w1",
    outcomes: [
      outcome(a1, {}),
      outcome(a2, { status: "PENDING", nextAttemptAt: retryAt, error: "the endpoint answered 500", statusCode: 500 }),
      outcome(a3, { status: "FAILED", error: "the endpoint answered 410", statusCode: 410, excerpt: "gone" }),
      outcome(b1, { status: "PENDING", nextAttemptAt: retryAt, error: "timed out", statusCode: null }),
      outcome(b2, { status: "FAILED", error: "gone", statusCode: null, durationMs: null, endpointFault: false }),
      outcome(b3, {}),
    ],
  });
  const key = (d: { endpointId: string; notificationId: string }) => `${d.endpointId}/${d.notificationId}`;
  expect(new Set(done.map(key)), "every delivery still held, not b3").toEqual(new Set([a1, a2, a3, b1, b2].map(key)));

  const rows = await f.sql<
    { key: string; status: string; next: Date; locked_by: string | null; code: number | null }[]
  >`
    select endpoint_id || '/' || notification_id as key, status, next_attempt_at as next, locked_by,
           last_status_code as code, sent_at is not null as sent
    from webhook_deliveries`;
  const row = (d: typeof a1) => rows.find((r) => r.key === key(d));
  expect(row(a1)).toMatchObject({ status: "SENT", locked_by: null, code: 204, sent: true });
  expect(row(a2)).toMatchObject({ status: "PENDING", next: retryAt, locked_by: null, code: 500, sent: false });
  expect(row(a3)).toMatchObject({ status: "FAILED", locked_by: null, code: 410 });
  expect(row(b1)).toMatchObject({ status: "PENDING", next: retryAt, code: null });
  expect(row(b2)).toMatchObject({ status: "FAILED", locked_by: null });
  expect(row(b3), "the lost lease is as the other worker holds it").toMatchObject({
    status: "PROCESSING",
    locked_by: "w2",
  });

  const attempts = await f.sql<{ key: string; status_code: number | null; error: string | null; excerpt: string }[]>`
    select endpoint_id || '/' || notification_id as key, status_code, error, response_excerpt as excerpt
    from webhook_attempts order by attempt_id`;
  expect(attempts.map((r) => r.key).sort(), "one row per attempt made and recorded").toEqual(
    [a1, a2, a3, b1].map(key).sort(),
  );
  expect(attempts.find((r) => r.key === key(a3))).toMatchObject({ status_code: 410, excerpt: "gone" });
  expect(attempts.find((r) => r.key === key(b1))).toMatchObject({ status_code: null, error: "timed out" });

  const health = await f.sql<{ endpoint_id: string; failing: boolean }[]>`
    select endpoint_id, failing_since is not null as failing from webhook_endpoints order by created_at`;
  expect([...health], "a had a success in the group; b only its own failures").toEqual([
    { endpoint_id: a, failing: false },
    { endpoint_id: b, failing: true },
  ]);
});
