// The executable end to end: serve with the admin API's tokens and a sealing key, an endpoint registered over HTTP,
// an entitlement event published to JetStream, and the endpoint's receiver getting it signed with its own secret.
import { expect, setDefaultTimeout, test } from "bun:test";
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { Webhook } from "standardwebhooks";
import { natsUrl, useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { SECRET_KEY, startReceiver, TOKENS, WRITER } from "./endpoints.helpers.ts";
import { deleteStreams, eventBytes, serveEnv, streamsOf, testConfig } from "./helpers.ts";

setDefaultTimeout(120_000);

const MAIN = new URL("../../src/notification/main.ts", import.meta.url).pathname;
const receiver = startReceiver();
const f = useTestDatabase("notif_endpoints_serve", { service: "notification" });

async function listeningPort(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve ended before listening: ${text}`);
    text += new TextDecoder().decode(value);
    const match = /"port":(\d+),"msg":"notification listening"/.exec(text);
    if (match) {
      reader.releaseLock();
      return match[1] as string;
    }
  }
}

test("an event stored by serve reaches the registered endpoint, signed with the endpoint's secret", async () => {
  const config = testConfig();
  const nats = await natsUrl();
  const extra = {
    NOTIFICATION_AUTH_TOKENS: TOKENS,
    NOTIFICATION_ENDPOINT_SECRET_KEY: SECRET_KEY,
    NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: "true",
  };
  const child = Bun.spawn(["bun", MAIN, "serve"], {
    env: serveEnv(config, { database: f.db.url, nats }, extra),
    stdout: "pipe",
    stderr: "inherit",
  });
  const nc = await connect({ servers: nats });
  try {
    const base = `http://127.0.0.1:${await listeningPort(child.stdout)}`;
    await waitUntil(async () => ((await fetch(`${base}/readyz`)).status === 200 ? true : undefined), "ready");
    const created = await fetch(`${base}/v1/webhook-endpoints`, {
      method: "POST",
      headers: { authorization: `Bearer ${WRITER}`, "content-type": "application/json" },
      body: JSON.stringify({ url: receiver.url, event_types: ["EntitlementGranted"] }),
    });
    expect(created.status).toBe(201);
    const { secret } = (await created.json()) as { secret: string };
    await jetstream(nc).publish(config.nats.subject, eventBytes({ userId: "u_serve" }));
    const hit = await waitUntil(async () => receiver.hits[0], "the webhook at the endpoint");
    expect(new Webhook(secret).verify(hit.body, hit.headers)).toMatchObject({
      user_id: "u_serve",
      type: "EntitlementGranted",
    });
    child.kill("SIGTERM");
    expect(await child.exited).toBe(0);
  } finally {
    child.kill("SIGKILL");
    await deleteStreams(nc, streamsOf(config));
    await nc.close();
  }
});
