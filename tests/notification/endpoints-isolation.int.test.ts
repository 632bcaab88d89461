// One endpoint that fails and one that hangs, beside healthy ones: the healthy endpoints receive everything while the
// hanging one still holds its first requests, and the failing one's retries never hold them up.
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { Waker } from "../../src/shared/runtime.ts";
import { useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { endpointApp, runEndpointWorker, startReceiver, storeNotifications } from "./endpoints.helpers.ts";

setDefaultTimeout(90_000);

const f = useTestDatabase("notif_endpoints_isolation", { service: "notification" });
const healthy = [startReceiver(), startReceiver(), startReceiver()];
const failing = startReceiver();
const hanging = startReceiver();
const held: (() => void)[] = [];
afterAll(() => {
  for (const release of held) release();
});

test("a failing and a hanging endpoint never delay the healthy ones", async () => {
  failing.answer = () => new Response("broken", { status: 500 });
  // Never answers while the test looks: its requests end only when released (or at the 60 s request timeout).
  hanging.answer = () => new Promise<Response>((resolve) => held.push(() => resolve(new Response("late"))));
  const waker = new Waker();
  const { call } = endpointApp(f.sql, { waker });
  for (const r of [failing, hanging, ...healthy]) {
    expect((await call("POST", "/v1/webhook-endpoints", { url: r.url })).status).toBe(201);
  }
  const worker = runEndpointWorker(f.sql, {
    waker,
    env: { NOTIFICATION_WEBHOOK_TIMEOUT: "60s", NOTIFICATION_ENDPOINT_CONCURRENCY: "4" },
  });
  const ids: string[] = [];
  for (let round = 0; round < 5; round++) {
    ids.push(
      ...(await storeNotifications(
        f.sql,
        Array.from({ length: 10 }, () => ({})),
      )),
    );
    waker.wake();
  }
  for (const r of healthy) {
    await waitUntil(async () => (r.hits.length >= ids.length ? true : undefined), "every healthy endpoint gets all 50");
    expect(new Set(r.hits.map((h) => h.headers["webhook-id"]))).toEqual(new Set(ids));
  }
  expect(hanging.hits.length, "the hanging endpoint holds only its own slots").toBeLessThanOrEqual(4);
  expect(held.length, "and none of its requests has been answered yet").toBe(hanging.hits.length);
  expect(failing.hits.length, "the failing endpoint was tried meanwhile").toBeGreaterThan(0);
  // A request reaches the receiver before its answer reaches the worker and the row says SENT: waited for, within
  // half the webhook timeout, so a healthy delivery held behind the hanging endpoint would still fail here.
  const sent = async () => {
    const [row] = await f.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries d join webhook_endpoints e using (endpoint_id)
      where e.url = ${healthy[0]?.url ?? ""} and d.status = 'SENT'`;
    return row?.n;
  };
  await waitUntil(async () => ((await sent()) === ids.length ? true : undefined), "every healthy delivery SENT").catch(
    () => undefined,
  );
  expect(await sent()).toBe(ids.length);
  hanging.answer = () => new Response("ok");
  for (const release of held.splice(0)) release();
  await worker.stop();
});
