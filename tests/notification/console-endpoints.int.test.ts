// The console's webhook endpoint pages: the list, an endpoint's recent attempts, and a replay (CSRF-protected).
import { expect, setDefaultTimeout, test } from "bun:test";
import { consoleClient, hiddenField, signIn } from "../support/console-client.ts";
import { useTestDatabase } from "../support/infra.ts";
import { notificationApp } from "./app.helpers.ts";
import { endpointApp, storeNotifications } from "./endpoints.helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_console_endpoints", { service: "notification" });
const TOKEN = "debug-token-for-the-console-0123";

test("endpoints are listed with their attempts, and a replay queues the window", async () => {
  const a = notificationApp(f.sql, {
    debugApi: { enabled: false, token: TOKEN },
    console: { enabled: true, idleMs: 60_000, alwaysSecure: false },
  });
  const client = consoleClient((r) => a.handle(r));
  await signIn(client, TOKEN);
  expect((await client.get("/console/endpoints")).text).toContain('data-testid="no-endpoints"');

  const { call } = endpointApp(f.sql);
  const since = new Date().toISOString();
  const created = await call("POST", "/v1/webhook-endpoints", { url: "http://127.0.0.1:9/<console>" });
  const id = created.body.endpoint_id as string;
  const [notificationId] = await storeNotifications(f.sql, [{}]);
  await f.sql`
    insert into webhook_attempts (endpoint_id, notification_id, attempt, at, status_code, duration_ms, error, response_excerpt)
    values (${id}, ${notificationId as string}, 1, now(), 503, 12, 'the endpoint answered 503', '<b>busy</b>')`;
  await f.sql`update webhook_deliveries set status = 'FAILED' where endpoint_id = ${id}`;

  const list = await client.get("/console/endpoints");
  expect(list.text.split('data-testid="endpoint-row"')).toHaveLength(2);
  expect(list.text).toContain("%3Cconsole%3E");
  const page = await client.get(`/console/endpoints/attempts?endpoint_id=${id}`);
  expect(page.text.split('data-testid="attempt-row"')).toHaveLength(2);
  expect(page.text).toContain("&lt;b&gt;busy&lt;/b&gt;");

  const action = 'action="/console/endpoints/replay"';
  const form = {
    csrf: hiddenField(page.text, "csrf", action),
    form_token: hiddenField(page.text, "form_token", action),
    endpoint_id: id,
    since,
    only_failed: "true",
  };
  expect((await client.post("/console/endpoints/replay", { ...form, csrf: "forged" })).status).toBe(403);
  const reply = await client.post("/console/endpoints/replay", form);
  expect(reply.location).toBe(`/console/endpoints/attempts?endpoint_id=${id}`);
  const [row] = await f.sql`select status from webhook_deliveries where endpoint_id = ${id}`;
  expect(row?.status).toBe("PENDING");
  expect((await client.get(reply.location ?? "")).text).toContain("1 notification(s) sent again");
});

test("an endpoint's recent attempts are listed newest first by attempt number, past ten of them", async () => {
  const a = notificationApp(f.sql, {
    debugApi: { enabled: false, token: TOKEN },
    console: { enabled: true, idleMs: 60_000, alwaysSecure: false },
  });
  const client = consoleClient((r) => a.handle(r));
  await signIn(client, TOKEN);
  const { call } = endpointApp(f.sql);
  const created = await call("POST", "/v1/webhook-endpoints", { url: "http://127.0.0.1:9/order" });
  const id = created.body.endpoint_id as string;
  await f.sql`
    insert into webhook_attempts (endpoint_id, notification_id, attempt, at, duration_ms)
    select ${id}, ${crypto.randomUUID()}, n, now(), 1 from generate_series(1, 12) n`;
  const page = await client.get(`/console/endpoints/attempts?endpoint_id=${id}`);
  const attempts = [...page.text.matchAll(/data-testid="attempt-row"><td>[^<]*<\/td><td>(\d+)<\/td>/g)].map((m) =>
    Number(m[1]),
  );
  expect(attempts, "the latest attempt first").toEqual(Array.from({ length: 12 }, (_, i) => 12 - i));
});
