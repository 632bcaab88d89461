// `bun run soak [--minutes N] [--streams N] [--rate N] [--keep]`: a chaos soak on clusters of its own (system.ts):
// grants and revokes at --rate a second (200) to --streams players (2,000) whose live streams stay open and resume
// with Last-Event-ID whenever cut, two webhook endpoints (one flaky), and one kill -9 a minute in rotation
// (chaos.ts). One structured progress line a minute; at the end the checks of checks.ts, the table of minutes and
// the verdict as its last line. Exit 0 only when nothing was lost, duplicated, missed by a stream or an endpoint.
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { finalAnswer } from "../drills/client.ts";
import { checkLedger, waitForQuiescence } from "../drills/ledger.ts";
import { settleUnanswered } from "../drills/settle.ts";
import { createChaos } from "./chaos.ts";
import { checkEndpoints, checkStreams, passedVerdict, readStored, type Verdict, verdictLine } from "./checks.ts";
import { startLoad } from "./load.ts";
import { openPlayerStreams } from "./players.ts";
import { formatMinutes, type Minute, minuteOf } from "./report.ts";
import { startSends } from "./sends.ts";
import { type System, startSystem } from "./system.ts";

const USAGE = "usage: bun run soak [--minutes N (30)] [--streams N (2000)] [--rate N (200)] [--keep]";
const DRAIN_MS = 300_000;

function options() {
  const { values } = parseArgs({
    args: Bun.argv.slice(2),
    options: {
      minutes: { type: "string", default: "30" },
      streams: { type: "string", default: "2000" },
      rate: { type: "string", default: "200" },
      keep: { type: "boolean", default: false },
    },
  });
  const whole = (name: string, text: string, max: number) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`--${name} must be a whole number from 1 to ${max}`);
    return n;
  };
  return {
    minutes: whole("minutes", values.minutes, 24 * 60),
    streams: whole("streams", values.streams, 9_000),
    rate: whole("rate", values.rate, 2_000),
    keep: values.keep,
  };
}

let opts: ReturnType<typeof options>;
try {
  opts = options();
} catch (error) {
  console.error(`${(error as Error).message}\n${USAGE}`);
  process.exit(2);
}

// Each open stream holds one of fetch's connections, and Bun allows 256 at once unless told more at start.
const room = opts.streams + 1_024;
if (Number(process.env.BUN_CONFIG_MAX_HTTP_REQUESTS ?? 256) < room) {
  const again = Bun.spawn([process.execPath, ...process.argv.slice(1)], {
    env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: String(room) },
    stdio: ["inherit", "inherit", "inherit"],
  });
  process.exit(await again.exited);
}

const root = mkdtempSync(join(tmpdir(), "soak-"));
chmodSync(root, 0o755);
let system: System | undefined;
const started = Date.now();
const say = (line: string) => console.log(`[soak] +${Math.round((Date.now() - started) / 1000)}s ${line}`);
const progress = (fields: Record<string, unknown>) => console.log(JSON.stringify({ soak: "progress", ...fields }));

process.on("exit", () => {
  system?.kill();
  if (!opts.keep) rmSync(root, { recursive: true, force: true });
});
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => process.exit(130));

async function runMinutes(s: System, prefix: string, players: string[]) {
  const urls = (list: System["entitlement"]) => () => {
    const up = list.filter((x) => x.ready()).map((x) => x.url);
    return up.length > 0 ? up : list.map((x) => x.url);
  };
  say(`opening ${players.length} player streams`);
  const streams = await openPlayerStreams({ players, urls: urls(s.notification), tokenFor: s.tokenFor });
  const load = startLoad({ players, rate: opts.rate, urls: urls(s.entitlement), token: s.token, prefix });
  const sends = startSends({ players, urls: urls(s.notification), rate: 50 });
  const chaos = createChaos(s, say);
  const begin = Date.now();
  const minutes: Minute[] = [];
  for (let m = 1; m <= opts.minutes; m++) {
    await Bun.sleep(Math.max(0, begin + (m - 1) * 60_000 + 30_000 - Date.now()));
    const kill = await chaos.killNext();
    say(`kill -9 ${kill.kind} (${kill.victim})`);
    await Bun.sleep(Math.max(0, begin + m * 60_000 - Date.now()));
    const rssMb = Object.fromEntries([...s.entitlement, ...s.notification].map((x) => [x.label, x.rssMb()]));
    const row = { ...minuteOf(load.sent, begin, m, kill), rssMb };
    minutes.push(row);
    progress({ ...row, in_flight: load.inFlight(), stream_reconnects: streams.reconnects(), sends: sends.count() });
  }
  await Promise.all([load.stop(), sends.stop()]);
  // A failover outlasts its minute: the time from each kill to the next 200 is read again once the load is over.
  minutes.forEach((row, i) => {
    row.firstOkMs = minuteOf(load.sent, begin, i + 1, chaos.kills[i]).firstOkMs;
  });
  say(`load stopped after ${load.sent.length} requests; waiting for the killed processes to be back`);
  await chaos.settle();
  return { streams, load, sends, chaos, minutes };
}

async function verify(s: System, prefix: string, run: Awaited<ReturnType<typeof runMinutes>>) {
  const urls = () => s.entitlement.map((x) => x.url);
  // settleUnanswered replays 8 at a time; a failover leaves thousands to settle, so slices of them go side by side.
  const slices = Array.from({ length: 16 }, (_, i) => run.load.sent.filter((_, j) => j % 16 === i));
  const settle = (slice: typeof run.load.sent) =>
    settleUnanswered(slice, { urls, token: s.token, timeoutMs: DRAIN_MS });
  const unsettled = (await Promise.all(slices.map(settle))).reduce((a, b) => a + b, 0);
  const accepted = run.load.sent.filter((r) => finalAnswer(r)?.status === 200);
  say(`${accepted.length} changes accepted (${unsettled} never settled); waiting for every notification SENT`);
  const drainMs = await waitForQuiescence(s.sql, prefix, accepted.length, DRAIN_MS);
  const ledger = await checkLedger(s.sql, prefix, accepted);
  const stored = await readStored(s.sql, prefix);
  const streams = await checkStreams(stored, run.streams.seqs, 120_000);
  const endpoints = await checkEndpoints(stored, s.receivers.all, DRAIN_MS);
  run.streams.stop();
  const problems = [...ledger.problems];
  if (unsettled > 0) problems.push(`${unsettled} requests never got a definite answer`);
  if (drainMs === undefined) problems.push("not every event SENT 5 minutes after the load stopped");
  if (run.streams.oddFrames() > 0) problems.push(`${run.streams.oddFrames()} reset/closed frames on player streams`);
  say(
    `stored ${stored.length} notifications; ${run.streams.reconnects()} stream reconnects; endpoint misses: ${endpoints.byEndpoint.join(", ")}`,
  );
  return { accepted, ledger, streams, endpoints, problems, unsettled };
}

async function main(): Promise<number> {
  say(
    `${opts.minutes} min, ${opts.streams} streams, ${opts.rate} changes/s; folder ${root}${opts.keep ? " (kept)" : ""}`,
  );
  system = await startSystem(root, say);
  say("everything is up");
  const prefix = `s${Date.now().toString(36)}-`;
  const players = Array.from({ length: opts.streams }, (_, i) => `${prefix}p${i}`);
  const run = await runMinutes(system, prefix, players);
  const checked = await verify(system, prefix, run);
  const kills: Record<string, number> = {};
  for (const k of run.chaos.kills) kills[k.kind] = (kills[k.kind] ?? 0) + 1;
  const verdict: Verdict = {
    minutes: opts.minutes,
    grants: checked.accepted.filter((r) => r.action === "grants").length,
    sends: run.sends.count(),
    kills,
    lost: checked.ledger.lost,
    duplicated: checked.ledger.duplicated,
    streamGaps: checked.streams.gaps,
    endpointMisses: checked.endpoints.total,
  };
  console.log(`\n${formatMinutes(run.minutes)}\n`);
  for (const p of checked.problems) console.log(`[soak] problem: ${p}`);
  console.log(verdictLine(verdict));
  // A request never settled has an outcome nobody knows: the run proves nothing about it, so it cannot pass.
  return passedVerdict(verdict) && checked.unsettled === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`[soak] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
