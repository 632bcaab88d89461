// An endpoint's slot is free once the endpoint answered, not once the outcome is recorded, and freeing it wakes the
// loop to claim the endpoint's next delivery: with one slot, a poll interval far longer than the test and the
// outcomes' statement held up by a lock, every delivery still reaches the endpoint one after the other.
import { expect, setDefaultTimeout, test } from "bun:test";
import { Waker } from "../../src/shared/runtime.ts";
import { useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { endpointApp, runEndpointWorker, startReceiver, storeNotifications } from "./endpoints.helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_endpoints_slots", { service: "notification" });
const receiver = startReceiver();

test("a slot is free once the endpoint answered, while its outcome still waits to be recorded", async () => {
  const waker = new Waker();
  const { call } = endpointApp(f.sql, { waker });
  expect((await call("POST", "/v1/webhook-endpoints", { url: receiver.url })).status).toBe(201);
  // The finalize writes the attempts log: a lock on it holds every outcome back until the test lets go.
  let letGo = () => {};
  const locked = new Promise<void>((resolve) => {
    void f.sql.begin(async (tx) => {
      await tx`lock table webhook_attempts in exclusive mode`;
      await new Promise<void>((release) => {
        letGo = release;
        resolve();
      });
    });
  });
  await locked;
  const worker = runEndpointWorker(f.sql, {
    waker,
    env: {
      NOTIFICATION_ENDPOINT_CONCURRENCY: "1",
      NOTIFICATION_DELIVERY_POLL_INTERVAL: "60s",
      NOTIFICATION_DELIVERY_IDLE_POLL_INTERVAL: "60s",
    },
  });
  try {
    const ids = await storeNotifications(f.sql, [{}, {}, {}]);
    waker.wake();
    await waitUntil(() => receiver.hits.length >= ids.length, "every delivery reaches the one-slot endpoint", 10_000);
    const [row] = await f.sql<{ n: number }[]>`select count(*)::int as n from webhook_deliveries where status = 'SENT'`;
    expect(row?.n, "no outcome was recorded meanwhile").toBe(0);
    letGo();
    await waitUntil(async () => {
      const [sent] = await f.sql<{ n: number }[]>`
        select count(*)::int as n from webhook_deliveries where status = 'SENT'`;
      return sent?.n === ids.length;
    }, "the outcomes recorded once the lock is gone");
  } finally {
    letGo();
    await worker.stop();
  }
});
