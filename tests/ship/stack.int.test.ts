// `bun run stack` end to end: it comes up against the given PostgreSQL and NATS, the curl grant it prints succeeds and
// the grant becomes a SENT notification in the debug inbox; Ctrl-C stops the services it started and exits 0.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { createTestDatabase, natsUrl, type TestDatabase, uniqueName } from "../support/infra.ts";
import { pipelineNatsNames, pipelineStreams } from "../support/nats-names.ts";
import { repoRoot } from "./support.ts";

let db: TestDatabase;
let dataDir: string;

// Own stream, subject and durables on the shared NATS, so no other process consumes this run's events.
const stream = uniqueName("stack-events");
const durable = uniqueName("stack-consumer");
const natsNames = pipelineNatsNames(stream, durable);

beforeAll(async () => {
  db = await createTestDatabase("stack");
  dataDir = mkdtempSync(join(tmpdir(), "stack-data-"));
});
afterAll(async () => {
  const nc = await connect({ servers: await natsUrl() });
  const jsm = await jetstreamManager(nc);
  for (const name of pipelineStreams(stream)) await jsm.streams.delete(name).catch(() => {});
  await nc.close();
  await db?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function readUntil(stream: ReadableStream<Uint8Array>, marker: string, timeoutMs: number): Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  while (!text.includes(marker)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`no "${marker}" within ${timeoutMs}ms:\n${text}`);
    const chunk = await Promise.race([reader.read(), Bun.sleep(left).then(() => ({ done: true, value: undefined }))]);
    if (chunk.done) throw new Error(`the stack ended before "${marker}":\n${text}`);
    text += decoder.decode(chunk.value);
  }
  reader.releaseLock();
  return text;
}

test("the printed curl grant yields a SENT notification; Ctrl-C stops everything", async () => {
  const stack = Bun.spawn([process.execPath, "run", "stack"], {
    cwd: repoRoot,
    env: { ...process.env, ...natsNames, DATABASE_URL: db.url, NATS_URL: await natsUrl(), STACK_DATA_DIR: dataDir },
    stdout: "pipe",
    stderr: "inherit",
  });
  try {
    const output = await readUntil(stack.stdout, "Ctrl-C stops", 180_000);
    const grant =
      /curl -s -X POST (\S+) -H 'Authorization: (Bearer \S+)' -H 'Content-Type: application\/json' -H 'Idempotency-Key: (\S+)' -d '(.+)'/.exec(
        output,
      );
    const inbox = /curl -s -H 'Authorization: (Bearer \S+)' (\S+\/debug\/notification\/inbox\/u_123)/.exec(output);
    expect(grant, "the stack prints a curl grant with its API token").not.toBeNull();
    expect(inbox, "the stack prints the debug inbox curl with its token").not.toBeNull();
    const [, url, authorization, key, body] = grant as RegExpExecArray;
    const unauthenticated = await fetch(url as string, { method: "POST", body });
    expect(unauthenticated.status, "the stack's API requires the printed token").toBe(401);
    const response = await fetch(url as string, {
      method: "POST",
      headers: {
        authorization: authorization as string,
        "content-type": "application/json",
        "idempotency-key": key as string,
      },
      body,
    });
    expect(response.status).toBe(200);

    let last: unknown;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const [, inboxAuth, inboxUrl] = inbox as RegExpExecArray;
      last = await (await fetch(inboxUrl as string, { headers: { authorization: inboxAuth as string } })).json();
      const notifications = (last as { notifications?: { status: string }[] }).notifications ?? [];
      if (notifications.some((n) => n.status === "SENT")) break;
      await Bun.sleep(250);
    }
    expect(JSON.stringify(last), "the grant is delivered and visible in the debug inbox").toContain('"SENT"');
  } finally {
    stack.kill("SIGINT");
    const code = await Promise.race([stack.exited, Bun.sleep(45_000).then(() => "timeout")]);
    if (code === "timeout") stack.kill("SIGKILL");
    expect(code, "Ctrl-C stops the stack cleanly").toBe(0);
  }
}, 300_000);
