// The endpoint delivery loop is woken by the deliveries themselves, never left to its poll: beside a hanging endpoint
// (whose slots stay taken) and with poll intervals far longer than the test, a healthy endpoint still receives every
// one of a stream of notifications stored while earlier deliveries are in flight. A share of slots that looked
// partial because deliveries ended while the claim ran once left the loop asleep until the next poll.
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { Waker } from "../../src/shared/runtime.ts";
import { useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { endpointApp, runEndpointWorker, startReceiver, storeNotifications } from "./endpoints.helpers.ts";

setDefaultTimeout(90_000);

const f = useTestDatabase("notif_endpoints_wake", { service: "notification" });
const healthy = startReceiver();
const hanging = startReceiver();
const held: (() => void)[] = [];
afterAll(() => {
  for (const release of held) release();
});

test("beside a hanging endpoint, with no poll to fall back on, every delivery to a healthy one is made", async () => {
  hanging.answer = () => new Promise<Response>((resolve) => held.push(() => resolve(new Response("late"))));
  // Slow enough answers that deliveries end while the next claim runs.
  healthy.answer = async () => {
    await Bun.sleep(Math.random() * 3);
    return new Response("ok");
  };
  const waker = new Waker();
  const { call } = endpointApp(f.sql, { waker });
  for (const r of [hanging, healthy]) {
    expect((await call("POST", "/v1/webhook-endpoints", { url: r.url })).status).toBe(201);
  }
  const worker = runEndpointWorker(f.sql, {
    waker,
    env: {
      NOTIFICATION_WEBHOOK_TIMEOUT: "60s",
      NOTIFICATION_ENDPOINT_CONCURRENCY: "4",
      NOTIFICATION_DELIVERY_POLL_INTERVAL: "60s",
      NOTIFICATION_DELIVERY_IDLE_POLL_INTERVAL: "60s",
    },
  });
  try {
    const ids: string[] = [];
    for (let round = 0; round < 40; round++) {
      ids.push(...(await storeNotifications(f.sql, [{}, {}, {}, {}, {}])));
      waker.wake();
      await Bun.sleep(Math.random() * 4);
    }
    await waitUntil(
      () => (healthy.hits.length >= ids.length ? true : undefined),
      `all ${ids.length} deliveries reach the healthy endpoint without a poll`,
      20_000,
    );
    expect(new Set(healthy.hits.map((h) => h.headers["webhook-id"]))).toEqual(new Set(ids));
    expect(hanging.hits.length, "the hanging endpoint holds only its own slots").toBeLessThanOrEqual(4);
  } finally {
    hanging.answer = () => new Response("ok");
    for (const release of held.splice(0)) release();
    await worker.stop();
  }
});
