// The SSRF guard at registration and at each delivery, with NOTIFICATION_ENDPOINT_ALLOW_PRIVATE off; and the
// connection going to the address that was checked while the request keeps the URL's host.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Address } from "../../src/notification/features/endpoints/url-guard.ts";
import { Waker } from "../../src/shared/runtime.ts";
import { useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { endpointApp, runEndpointWorker, startReceiver, storeNotifications } from "./endpoints.helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_endpoints_ssrf", { service: "notification" });
const receiver = startReceiver();
const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const stop of stops) await stop();
});

/** A name server the test controls: each host answers what `answers` says right now. */
const answers = new Map<string, Address[]>();
const resolve = async (host: string) => answers.get(host) ?? [];

describe("the SSRF guard", () => {
  test.each([
    "http://127.0.0.1:8080/hook",
    "http://localhost/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.8/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://0.0.0.0/",
    "https://user:secret@hooks.example/",
    "file:///etc/passwd",
  ])("registration refuses %s with ENDPOINT_URL_NOT_ALLOWED", async (url) => {
    const { call } = endpointApp(f.sql, { allowPrivate: false });
    const answer = await call("POST", "/v1/webhook-endpoints", { url });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe("ENDPOINT_URL_NOT_ALLOWED");
  });

  test("a change of URL is checked too", async () => {
    answers.set("public.example", [{ address: "93.184.216.34", family: 4 }]);
    const { call } = endpointApp(f.sql, { allowPrivate: false, resolve });
    const created = await call("POST", "/v1/webhook-endpoints", { url: "https://public.example/hook" });
    expect(created.status).toBe(201);
    const changed = await call("PATCH", `/v1/webhook-endpoints/${created.body.endpoint_id}`, {
      url: "http://127.0.0.1/",
    });
    expect(changed.body.code).toBe("ENDPOINT_URL_NOT_ALLOWED");
    await call("DELETE", `/v1/webhook-endpoints/${created.body.endpoint_id}`);
  });

  test("a host that resolved to a public address at registration and to loopback at delivery gets nothing", async () => {
    const host = "rebinding.example";
    answers.set(host, [{ address: "93.184.216.34", family: 4 }]);
    const waker = new Waker();
    const { call } = endpointApp(f.sql, { allowPrivate: false, resolve, waker });
    const created = await call("POST", "/v1/webhook-endpoints", { url: `http://${host}:${receiver.server.port}/hook` });
    expect(created.status).toBe(201);
    answers.set(host, [{ address: "127.0.0.1", family: 4 }]);
    const worker = runEndpointWorker(f.sql, { waker, resolve, env: { NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: "false" } });
    stops.push(worker.stop);
    await storeNotifications(f.sql, [{}]);
    waker.wake();
    const attempt = await waitUntil(async () => {
      const page = await call("GET", `/v1/webhook-endpoints/${created.body.endpoint_id}/attempts`);
      return page.body.attempts[0];
    }, "the refused attempt");
    expect(attempt.status_code).toBeNull();
    expect(attempt.error).toContain("may not reach");
    expect(receiver.hits).toHaveLength(0);
    await call("DELETE", `/v1/webhook-endpoints/${created.body.endpoint_id}`);
    await worker.stop();
    stops.pop();
  });

  test("the request goes to the checked address and carries the URL's host", async () => {
    answers.set("receiver.example", [{ address: "127.0.0.1", family: 4 }]);
    const waker = new Waker();
    const { call } = endpointApp(f.sql, { resolve, waker });
    const url = `http://receiver.example:${receiver.server.port}/hook`;
    expect((await call("POST", "/v1/webhook-endpoints", { url })).status).toBe(201);
    const worker = runEndpointWorker(f.sql, { waker, resolve });
    stops.push(worker.stop);
    const [id] = await storeNotifications(f.sql, [{}]);
    waker.wake();
    const hit = await waitUntil(async () => receiver.hits.find((h) => h.headers["webhook-id"] === id), "the delivery");
    expect(hit.headers.host).toBe(`receiver.example:${receiver.server.port}`);
  });
});
