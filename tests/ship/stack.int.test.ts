// `bun run stack` end to end, twice on the same state, as a new user would: each run's printed curl grant answers 200
// (a fresh demo user, never "already ACTIVE"), the grant becomes a SENT notification, the second run does not rebuild,
// docs/api.md's examples run after it with the variables it prints, a terminal's Ctrl-C (SIGINT to the whole process
// group) stops it with exit 0 and each service hears one signal, and `--reset` drops its database and streams. The
// curls and the export line name one demo user, the printed operator commands reach the stack's database, the console
// and other settings passed through from the environment are shown, and `--help` starts nothing.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import { OPENAPI_DOCS } from "../../tools/docs-openapi.ts";
import { pipelineStreams } from "../../tools/infra/nats-names.ts";
import { natsUrl, postgresAdminUrl, uniqueName } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { documentedOperations, runApiExamples } from "./api-examples.ts";
import { printedGrant, printedInbox, readUntil } from "./stack-output.ts";
import { repoRoot } from "./support.ts";

let dataDir: string;
// Its own database and stream prefix, as another checkout's stack would have, so this test meets nothing else.
const names = { STACK_DATABASE: uniqueName("stack"), STACK_NATS_PREFIX: uniqueName("stack") };
const streams = pipelineStreams(`${names.STACK_NATS_PREFIX}-events`);

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "stack-data-"));
});
// `--reset` starts a Bun process and talks to both servers: 3–5 s at a load average of 25, past the default 5 s.
afterAll(async () => {
  await stackCommand(["--reset"]).catch(() => {});
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

async function stackEnv(): Promise<Record<string, string | undefined>> {
  return { ...process.env, ...names, DATABASE_URL: await postgresAdminUrl(), NATS_URL: await natsUrl() };
}

async function stackCommand(args: string[]): Promise<string> {
  const proc = Bun.spawn([process.execPath, "run", "stack", ...args], {
    cwd: repoRoot,
    env: { ...(await stackEnv()), STACK_DATA_DIR: dataDir },
    stdout: "pipe",
    stderr: "inherit",
  });
  const [code, out] = await Promise.all([proc.exited, new Response(proc.stdout).text()]);
  if (code !== 0) throw new Error(`bun run stack ${args.join(" ")} exited ${code}:\n${out}`);
  return out;
}

/** The printed grant, run by a shell exactly as printed; its HTTP status. */
async function runPrintedGrant(output: string): Promise<number> {
  const line = printedGrant(output);
  expect(line, "the stack prints a curl grant").toBeDefined();
  const proc = Bun.spawn(["bash", "-c", `${line} -o /dev/null -w '%{http_code}'`], { stdout: "pipe" });
  return Number(await new Response(proc.stdout).text());
}

async function waitForSent(output: string): Promise<string> {
  const inbox = printedInbox(output);
  expect(inbox, "the stack prints the debug inbox curl with its token").toBeDefined();
  const { authorization, url } = inbox as { authorization: string; url: string };
  let last = "";
  const sent = async () => {
    last = await (await fetch(url, { headers: { authorization } })).text();
    return last.includes('"SENT"');
  };
  // On time-out the caller's assertion shows the last answer.
  await waitUntil(sent, "the notification to be SENT", 30_000, 250).catch(() => undefined);
  return last;
}

/** One run: up, the printed grant, then `during` while it is up; then Ctrl-C as a terminal sends it. */
async function runStack(
  during: (output: string) => Promise<void>,
  extraEnv: Record<string, string> = {},
): Promise<string> {
  const logs = ["entitlement", "notification"].map((service) => join(dataDir, "logs", `${service}.log`));
  const before = logs.map((log) => (existsSync(log) ? readFileSync(log, "utf8").length : 0));
  // Its own process group, as a shell gives a foreground job: the SIGINT below goes to every process in it.
  const stack = Bun.spawn([process.execPath, "run", "stack"], {
    cwd: repoRoot,
    env: { ...(await stackEnv()), STACK_DATA_DIR: dataDir, ...extraEnv },
    detached: true,
    stdout: "pipe",
    stderr: "inherit",
  });
  let output = "";
  try {
    output = await readUntil(stack.stdout, "Ctrl-C stops", 240_000);
    expect(await runPrintedGrant(output), "the printed curl grant succeeds").toBe(200);
    expect(await waitForSent(output), "the grant is delivered and visible in the debug inbox").toContain('"SENT"');
    await during(output);
  } finally {
    process.kill(-stack.pid, "SIGINT");
    const code = await Promise.race([stack.exited, Bun.sleep(45_000).then(() => "timeout")]);
    if (code === "timeout") process.kill(-stack.pid, "SIGKILL");
    expect(code, "Ctrl-C stops the stack cleanly").toBe(0);
  }
  // The logs are kept across runs: this run's lines are what came after the previous run's.
  logs.forEach((file, i) => {
    const log = readFileSync(file, "utf8").slice(before[i]);
    expect(log, `${file} stops on one signal`).not.toContain("second signal");
    expect(log.match(/"shutting down"/g)?.length, `${file}: shut down once`).toBe(1);
  });
  return output;
}

/** The printed operator commands, run by a shell as printed (the admin URL's password where the stack hid it). */
async function runOperatorCommands(output: string): Promise<string[]> {
  const lines = [...output.matchAll(/^ {2}(DATABASE_URL='\S+' dist\/\S+ .+)$/gm)].map((m) => m[1] as string);
  expect(lines.length, "the stack prints operator commands with the stack's DATABASE_URL").toBeGreaterThan(0);
  const password = new URL(await postgresAdminUrl()).password;
  const failed: string[] = [];
  for (const line of lines) {
    const proc = Bun.spawn(["bash", "-c", line.replace(":***@", `:${password}@`)], {
      cwd: repoRoot,
      stdout: "pipe",
      stderr: "pipe",
    });
    if ((await proc.exited) !== 0) failed.push(`${line}: ${await new Response(proc.stderr).text()}`);
  }
  return failed;
}

/**
 * Web Push is on with the stack's VAPID pair, kept in its data folder: the push page, its worker and its config (the
 * API base and the public key, the one the summary prints) are served; the private key is never printed.
 */
async function expectPushPage(output: string): Promise<void> {
  const kept = JSON.parse(readFileSync(join(dataDir, "webpush-vapid.json"), "utf8")) as Record<string, string>;
  expect(output, "the private key is never printed").not.toContain(kept.privateKey as string);
  const [, pushPage, key] = /^ {2}push page +(\S+)\/push\.html .*VAPID public key (\S+)\)$/m.exec(output) ?? [];
  expect(key, "the summary prints the public key the stack configured").toBe(kept.publicKey);
  expect((await fetch(`${pushPage}/push.html`)).status).toBe(200);
  const worker = await fetch(`${pushPage}/push-worker.js`);
  expect(worker.headers.get("content-type")).toStartWith("text/javascript");
  const config = (await (await fetch(`${pushPage}/push-config.json`)).json()) as Record<string, string>;
  expect(config.vapid_public_key).toBe(kept.publicKey);
  expect(output).toContain(`notification  ${config.api}`);
}

test("--help prints the usage and starts nothing; an unknown argument is a usage error", async () => {
  const help = Bun.spawn([process.execPath, "run", "stack", "--help"], { cwd: repoRoot, stdout: "pipe" });
  const [code, out] = await Promise.all([help.exited, new Response(help.stdout).text()]);
  expect(code).toBe(0);
  expect(out).toContain("usage: bun run stack");
  expect(out).not.toContain("using PostgreSQL");
  const wrong = Bun.spawn([process.execPath, "run", "stack", "--nope"], { cwd: repoRoot, stderr: "pipe" });
  const [wrongCode, err] = await Promise.all([wrong.exited, new Response(wrong.stderr).text()]);
  expect(wrongCode).toBe(2);
  expect(err, "it says what was wrong").toContain("bun run stack: unknown flag '--nope'");
});

test("twice on the same state: the printed curl answers 200 each time, api.md's examples run, --reset cleans", async () => {
  const passed = { ENTITLEMENT_CONSOLE_ENABLED: "true", NOTIFICATION_WEBHOOK_TIMEOUT: "7s" };
  const first = await runStack(async (output) => {
    const url = /curl -s -X POST (\S+\/v1\/entitlements\/grants)/.exec(output)?.[1] as string;
    expect((await fetch(url, { method: "POST", body: "{}" })).status, "the API requires the printed token").toBe(401);
    expect(await runOperatorCommands(output), "the printed operator commands run").toEqual([]);
    const send = /^ {2}(curl -s -X POST \S+\/v1\/notifications .+)$/m.exec(output)?.[1];
    expect(send, "the stack prints a curl that sends the demo player a notification").toBeDefined();
    const sent = Bun.spawn(["bash", "-c", `${send} -o /dev/null -w '%{http_code}'`], { stdout: "pipe" });
    expect(Number(await new Response(sent.stdout).text()), "the printed send is accepted").toBe(202);
    const page = /^ {2}player page +(\S+)/m.exec(output)?.[1] as string;
    const served = await fetch(page);
    expect(served.status, "the stack serves the player page").toBe(200);
    expect(await served.text()).toContain('data-testid="sign-in"');
    await expectPushPage(output);
  }, passed);
  expect(first, "the stack names its own database").toContain(`database ${names.STACK_DATABASE}`);
  expect(first, "the console it was told to serve is shown").toMatch(/console +http:\S+\/console/);
  expect(first, "settings from the environment are shown").toContain("ENTITLEMENT_CONSOLE_ENABLED=true");
  expect(first).toContain("NOTIFICATION_WEBHOOK_TIMEOUT=7s");
  const curlUsers = [...first.matchAll(/"user_id":"([^"]+)"|\/users\/([^/\s]+)\/|inbox\/(\S+)/g)].map(
    (m) => m[1] ?? m[2] ?? m[3],
  );
  const exported = /^ {2}export .*USER_ID=(\S+)/m.exec(first)?.[1];
  expect(new Set([...curlUsers, exported]), "the curls and the export line name one demo user").toEqual(
    new Set([exported]),
  );

  const second = await runStack(async (output) => {
    const exports = /^ {2}export (.+)$/m.exec(output)?.[1] as string;
    expect(exports, "the stack prints the variables of api.md's examples").toBeDefined();
    const vars = Object.fromEntries(exports.split(" ").map((pair) => pair.split("=", 2) as [string, string]));
    const { calls } = await runApiExamples(vars);
    expect(calls.filter((c) => c.status >= 400).map((c) => `${c.status} ${c.method} ${c.path}`)).toEqual([]);
    expect(
      calls.map((c) => c.status),
      "the conditional GET is shown",
    ).toContain(304);
    const services = { entitlement: vars.ENTITLEMENT, notification: vars.NOTIFICATION };
    const uncovered = (Object.keys(services) as (keyof typeof services)[]).flatMap((service) =>
      documentedOperations(OPENAPI_DOCS[service])
        .filter((op) => !calls.some((c) => c.method === op.method && op.pattern.test(c.path)))
        .map((op) => `${service}: ${op.method} ${op.template}`),
    );
    expect(uncovered, "every route of both services has a curl example in docs/api.md").toEqual([]);
  });
  expect(second, "the second run reuses the executables").toContain("not rebuilding");
  expect(second, "the second run reuses its database").not.toContain(`created database ${names.STACK_DATABASE}`);
  const vapidKey = /VAPID public key (\S+)\)/.exec(first)?.[1];
  expect(second, "the second run keeps the VAPID pair: subscriptions outlive a run").toContain(
    `VAPID public key ${vapidKey})`,
  );

  expect(await stackCommand(["--reset"])).toContain(`database ${names.STACK_DATABASE}`);
  const admin = postgres(await postgresAdminUrl(), { max: 1 });
  const left = await admin`select 1 from pg_database where datname = ${names.STACK_DATABASE}`;
  await admin.end();
  expect(left.length, "--reset drops the stack's database").toBe(0);
  const nc = await connect({ servers: await natsUrl() });
  const jsm = await jetstreamManager(nc);
  const kept = await Promise.all(
    streams.map((s) =>
      jsm.streams.info(s).then(
        () => s,
        () => undefined,
      ),
    ),
  );
  await nc.close();
  expect(kept.filter(Boolean), "--reset deletes the stack's streams").toEqual([]);
}, 600_000);
