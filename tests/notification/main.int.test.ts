// The executable's life cycle: serve (migrations, HTTP, workers) until SIGTERM then exit 0; bad configuration → 78.

import { expect, setDefaultTimeout, test } from "bun:test";
import { connect } from "@nats-io/transport-node";
import { natsUrl, useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { deleteStreams, serveEnv, streamsOf, testConfig } from "./helpers.ts";

setDefaultTimeout(90_000);

const MAIN = new URL("../../src/notification/main.ts", import.meta.url).pathname;
const TOKEN = "main-test-debug-token-0123456789";
const f = useTestDatabase("notif_main", { service: "notification" });

async function readUntil(stream: ReadableStream<Uint8Array>, pattern: RegExp): Promise<RegExpExecArray> {
  const reader = stream.getReader();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`stream ended before ${pattern}: ${text}`);
    text += new TextDecoder().decode(value);
    const match = pattern.exec(text);
    if (match) {
      reader.releaseLock();
      return match;
    }
  }
}

test("serve answers, becomes ready with the consumer bound, and exits 0 on SIGTERM", async () => {
  const config = testConfig();
  const nats = await natsUrl();
  const child = Bun.spawn(["bun", MAIN, "serve"], {
    env: serveEnv(
      config,
      { database: f.db.url, nats },
      { NOTIFICATION_DEBUG_API_ENABLED: "true", NOTIFICATION_DEBUG_API_TOKEN: TOKEN },
    ),
    stdout: "pipe",
    stderr: "inherit",
  });
  try {
    const match = await readUntil(child.stdout, /"port":(\d+),"msg":"notification listening"/);
    const base = `http://127.0.0.1:${match[1]}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await waitUntil(async () => (await fetch(`${base}/readyz`)).status === 200, "/readyz to answer 200");
    expect(ready).toBe(true);
    const inbox = await fetch(`${base}/debug/notification/inbox/nobody`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(await inbox.json()).toEqual({ user_id: "nobody", notifications: [] });
    child.kill("SIGTERM");
    expect(await child.exited).toBe(0);
  } finally {
    child.kill("SIGKILL");
    const nc = await connect({ servers: nats });
    await deleteStreams(nc, streamsOf(config));
    await nc.close();
  }
});

test("invalid configuration exits 78 naming the variable", async () => {
  const child = Bun.spawn(["bun", MAIN, "migrate"], {
    env: { PATH: process.env.PATH ?? "", NOTIFICATION_DELIVERY_LEASE: "soon" },
    stdout: "pipe",
    stderr: "pipe",
  });
  expect(await child.exited).toBe(78);
  expect(await new Response(child.stderr).text()).toContain("NOTIFICATION_DELIVERY_LEASE");
});

test("unknown subcommands exit 2; --help lists serve and migrate", async () => {
  const bad = Bun.spawn(["bun", MAIN, "nope"], { stdout: "pipe", stderr: "pipe" });
  expect(await bad.exited).toBe(2);
  const help = Bun.spawn(["bun", MAIN, "--help"], { stdout: "pipe", stderr: "pipe" });
  expect(await help.exited).toBe(0);
  const text = await new Response(help.stdout).text();
  expect(text).toContain("serve");
  expect(text).toContain("migrate");
});
