// An endpoint delivery claimed by a worker that then dies is taken over once its lease ends, and a worker that lost
// its lease changes nothing: every notification reaches every subscribed endpoint at least once.
import { expect, setDefaultTimeout, test } from "bun:test";
import { claimDeliveries, finalizeDeliveries } from "../../src/notification/work/endpoints/delivery-queries.ts";
import { Waker } from "../../src/shared/runtime.ts";
import { useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { endpointApp, runEndpointWorker, startReceiver, storeNotifications } from "./endpoints.helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_endpoints_leases", { service: "notification" });
const receiver = startReceiver();

test("a claim that is never finalized is taken over after its lease; the first worker's late outcome changes nothing", async () => {
  const { call } = endpointApp(f.sql);
  const created = await call("POST", "/v1/webhook-endpoints", { url: receiver.url });
  const [id] = await storeNotifications(f.sql, [{}]);
  const now = new Date();
  const claim = { now, lockedBy: "dead-worker", limit: 10, perKey: 8, free: [] };
  const [claimed] = await claimDeliveries(f.sql, { ...claim, leaseUntil: new Date(now.getTime() + 60_000) });
  expect(claimed?.notificationId).toBe(id as string);
  expect(
    await claimDeliveries(f.sql, { ...claim, lockedBy: "other", leaseUntil: now }),
    "a held lease is not claimed",
  ).toEqual([]);

  // The lease ends (moved into the past here instead of waiting a minute).
  await f.sql`update webhook_deliveries set next_attempt_at = now() - interval '1 second' where notification_id = ${id as string}`;
  const waker = new Waker();
  const worker = runEndpointWorker(f.sql, { waker });
  waker.wake();
  await waitUntil(async () => receiver.hits.find((h) => h.headers["webhook-id"] === id), "the delivery taken over");
  await waitUntil(async () => {
    const [row] = await f.sql`select status from webhook_deliveries where notification_id = ${id as string}`;
    return row?.status === "SENT" || undefined;
  }, "SENT by the second worker");
  await worker.stop();

  const late = await finalizeDeliveries(f.sql, {
    lockedBy: "dead-worker",
    outcomes: [
      {
        endpointId: created.body.endpoint_id,
        notificationId: id as string,
        status: "FAILED",
        attempt: 1,
        at: new Date(),
        nextAttemptAt: null,
        error: "late",
        statusCode: 500,
        durationMs: 1,
        excerpt: null,
        endpointFault: true,
      },
    ],
  });
  expect(late, "the dead worker's outcome finds nothing it still holds").toEqual([]);
  const [row] =
    await f.sql`select status, attempt_count from webhook_deliveries where notification_id = ${id as string}`;
  expect(row).toEqual({ status: "SENT", attempt_count: 2 });
  const [attempts] = await f.sql<{ n: number }[]>`select count(*)::int as n from webhook_attempts where error = 'late'`;
  expect(attempts?.n, "nor is its attempt logged").toBe(0);
});
