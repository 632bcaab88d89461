// While no endpoint is enabled, the notifications this process stores cost the endpoint delivery worker nothing: no
// claim, no look for the next due time (it used to run both for every stored batch). An endpoint that another process
// creates is still delivered to at once: the creation's NOTIFY tells the worker to look again.
import { expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { SERVICE_SCHEMAS, useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { endpointApp, runEndpointWorker, startReceiver, storeNotifications } from "./endpoints.helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_endpoints_idle", { service: "notification" });
const receiver = startReceiver();

test("with no endpoint enabled, stored notifications wake no statement; one created elsewhere is served at once", async () => {
  // The worker's own pool, every statement it sends recorded (the LISTEN names no table).
  const sent: string[] = [];
  const counted = postgres(f.db.url, {
    max: 2,
    onnotice: () => {},
    connection: { search_path: SERVICE_SCHEMAS.notification },
    debug: (_connection, text) => {
      if (text.includes("webhook_endpoints")) sent.push(text);
    },
  });
  const worker = runEndpointWorker(counted, {
    env: { NOTIFICATION_DELIVERY_POLL_INTERVAL: "100ms", NOTIFICATION_DELIVERY_IDLE_POLL_INTERVAL: "60s" },
  });
  try {
    // Two empty rounds make the worker idle: it looks for the next due time, then sleeps up to the idle poll.
    await waitUntil(() => sent.some((s) => s.includes("min(d.next_attempt_at)")), "the worker goes idle");
    const idle = sent.length;
    for (let batch = 0; batch < 10; batch++) {
      await storeNotifications(f.sql, [{}, {}]);
      worker.waker.wake();
      // Time for a wake to turn into a statement, as it did before.
      await Bun.sleep(30);
    }
    expect(sent.length - idle, "statements of the worker for batches no endpoint can receive").toBe(0);

    // Another process (its own app, not wired to this worker) registers an endpoint; the next batch goes out at once.
    const elsewhere = endpointApp(f.sql);
    expect((await elsewhere.call("POST", "/v1/webhook-endpoints", { url: receiver.url })).status).toBe(201);
    const [id] = await storeNotifications(f.sql, [{}]);
    worker.waker.wake();
    await waitUntil(
      () => receiver.hits.some((h) => h.headers["webhook-id"] === id),
      "the notification stored after the endpoint was created is delivered long before the idle poll",
      5_000,
    );
  } finally {
    await worker.stop();
    await counted.end({ timeout: 5 });
  }
});
