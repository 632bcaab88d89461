// The receiver that docs/webhooks.md shows (docs/examples/webhook-receiver.ts, quoted there verbatim) against real
// deliveries of the webhook channel: it verifies them, handles a notification once however often it is delivered,
// and refuses a body that was changed on the way.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type WebhookNotification, webhookReceiver } from "../../docs/examples/webhook-receiver.ts";
import { createWebhookSender } from "../../src/notification/work/channels/webhook.ts";
import { useTestDatabase } from "../support/infra.ts";
import { deliverBatch } from "./delivery.helpers.ts";
import { deliveryDeps, notificationRow, seedNotification } from "./helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_webhook_receiver", { service: "notification", resetEach: true });
const SECRET = `whsec_${Buffer.from("the receiver's secret, 32 bytes!").toString("base64")}`;
const docs = resolve(import.meta.dir, "../../docs");

const handled: WebhookNotification[] = [];
const statuses: number[] = [];
let tamper = false;
let server: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  const receive = webhookReceiver(SECRET, async (n) => void handled.push(n));
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (request) => {
      const body = await request.text();
      const forwarded = new Request(request.url, {
        method: "POST",
        headers: request.headers,
        body: tamper ? body.replace("u_receiver", "u_attacker") : body,
      });
      const response = await receive(forwarded);
      statuses.push(response.status);
      return response;
    },
  });
});
afterAll(() => server.stop(true));

const deliver = () =>
  deliverBatch(
    deliveryDeps(f.sql, new Date(), {
      send: createWebhookSender({
        url: `http://127.0.0.1:${server.port}/hook`,
        secret: SECRET,
        timeoutMs: 5_000,
        now: () => new Date(),
      }),
    }),
  );

test("docs/webhooks.md quotes the example receiver as it is", () => {
  const example = readFileSync(resolve(docs, "examples/webhook-receiver.ts"), "utf8");
  expect(readFileSync(resolve(docs, "webhooks.md"), "utf8")).toContain(`\`\`\`ts\n${example}\`\`\``);
});

test("the documented receiver verifies a real delivery, once per notification, and refuses a changed body", async () => {
  const id = await seedNotification(f.sql, { createdAt: new Date(Date.now() - 1000), userId: "u_receiver" });
  await deliver();
  expect(statuses).toEqual([204]);
  expect(handled).toHaveLength(1);
  expect(handled[0]).toMatchObject({ notification_id: id, user_id: "u_receiver", type: "EntitlementGranted" });
  expect(Object.keys(handled[0] as object).sort()).toEqual(
    ["event_id", "notification_id", "occurred_at", "payload", "type", "user_id"].sort(),
  );
  expect((await notificationRow(f.sql, id)).status).toBe("SENT");

  // Delivered again (as after a lost acknowledgement or a requeue): accepted, not handled twice.
  // Due a second ago: the delivery's clock is JavaScript's, in whole milliseconds, and PostgreSQL's now() of the same
  // millisecond is microseconds later, so a row due at now() was sometimes not yet due for the claim.
  await f.sql`
    update notifications set status = 'PENDING', next_retry_at = now() - interval '1 second'
    where notification_id = ${id}`;
  await deliver();
  expect(statuses).toEqual([204, 204]);
  expect(handled).toHaveLength(1);

  tamper = true;
  const changed = await seedNotification(f.sql, { createdAt: new Date(Date.now() - 1000), userId: "u_receiver" });
  await deliver();
  expect(statuses.at(-1), "a body changed on the way fails verification").toBe(401);
  expect(handled).toHaveLength(1);
  expect((await notificationRow(f.sql, changed)).status, "and is retried").toBe("PENDING");
});
