// `bun run soak [--minutes N] [--streams N] [--rate N] [--send-rate N] [--keep]`: a chaos soak on clusters of its own
// (system.ts): grants and revokes at --rate a second (200) and sends of the send API at --send-rate a second (50,
// sends.ts) to --streams players (2,000) whose live streams stay open and resume with Last-Event-ID whenever cut, two
// webhook endpoints (one flaky), and one kill -9 a minute in rotation (chaos.ts). One progress line a minute; at the
// end the checks of checks.ts, the table of minutes and the verdict as its last line. Exit 0 only when nothing was lost, duplicated, missed by a stream or an endpoint.
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { finalAnswer } from "../drills/client.ts";
import { checkLedger, waitForQuiescence } from "../drills/ledger.ts";
import { settleUnanswered } from "../drills/settle.ts";
import { createAttempts } from "./attempts.ts";
import { createChaos } from "./chaos.ts";
import {
  checkEndpoints,
  checkStreams,
  passedVerdict,
  readStored,
  sendLedger,
  type Verdict,
  verdictLine,
} from "./checks.ts";
import { startLoad } from "./load.ts";
import { openPlayerStreams } from "./players.ts";
import { formatMinutes, type Minute, minuteOf, progressLine, sendMinuteOf } from "./report.ts";
import { SEND_TYPE, type SentNotice, startSends } from "./sends.ts";
import { type System, startSystem } from "./system.ts";

const USAGE =
  "usage: bun run soak [--minutes N (30)] [--streams N (2000)] [--rate N (200)] [--send-rate N (50)] [--keep]";
const DRAIN_MS = 300_000;
/**
 * How long the endpoint deliveries get to finish once every notification is SENT. Each endpoint has 8 deliveries in
 * flight per process, whatever its backlog: in the half-hour run at the default rates both endpoints were still
 * behind (about 240 attempts a second each) when the load stopped, so their queues drain for minutes after it.
 */
const ENDPOINT_DRAIN_MS = 1_200_000;

function options() {
  const { values } = parseArgs({
    args: Bun.argv.slice(2),
    options: {
      minutes: { type: "string", default: "30" },
      streams: { type: "string", default: "2000" },
      rate: { type: "string", default: "200" },
      "send-rate": { type: "string", default: "50" },
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
    sendRate: whole("send-rate", values["send-rate"], 1_000),
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

// Each open stream holds one of fetch's connections, and Bun allows 256 at once unless told more at start; the
// changes and sends share what is left beyond the streams, less some room (attempts.ts).
const MAX_ON_THE_WIRE = 768;
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
const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const loadAtStart = loadAverage();
const say = (line: string) => console.log(`[soak] +${Math.round((Date.now() - started) / 1000)}s ${line}`);

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
  const attempt = createAttempts(MAX_ON_THE_WIRE);
  const load = startLoad({ players, rate: opts.rate, urls: urls(s.entitlement), token: s.token, prefix, attempt });
  const sendUrls = urls(s.notification);
  const sends = startSends({ players, urls: sendUrls, rate: opts.sendRate, token: s.notifyToken, prefix, attempt });
  const chaos = createChaos(s, say);
  const begin = Date.now();
  const minutes: Minute[] = [];
  for (let m = 1; m <= opts.minutes; m++) {
    await Bun.sleep(Math.max(0, begin + (m - 1) * 60_000 + 30_000 - Date.now()));
    const kill = await chaos.killNext();
    say(kill.note ? `kill -9 ${kill.kind} ${kill.note}` : `kill -9 ${kill.kind} (${kill.victim})`);
    await Bun.sleep(Math.max(0, begin + m * 60_000 - Date.now()));
    const rssMb = Object.fromEntries([...s.entitlement, ...s.notification].map((x) => [x.label, x.rssMb()]));
    const row = { ...minuteOf(load.sent, begin, m, kill), sends: sendMinuteOf(sends.sent, begin, m), rssMb };
    minutes.push(row);
    const inFlight = load.inFlight() + sends.inFlight();
    say(progressLine(row, opts.minutes, { inFlight, reconnects: streams.reconnects() }));
  }
  say("load stopped; open requests retry with their keys, the killed processes come back");
  const [, unsettledSends] = await Promise.all([load.stop(DRAIN_MS), sends.stop(DRAIN_MS), chaos.settle()]);
  // A failover outlasts its minute: the time from each kill to the next 200, and the sends' 202s, are read again.
  minutes.forEach((row, i) => {
    row.firstOkMs = minuteOf(load.sent, begin, i + 1, chaos.kills[i]).firstOkMs;
    row.sends = sendMinuteOf(sends.sent, begin, i + 1);
  });
  say(`${load.sent.length} changes and ${sends.sent.length} sends made (${unsettledSends} sends never settled)`);
  return { streams, load, sends, unsettledSends, chaos, minutes };
}

async function verify(s: System, prefix: string, run: Awaited<ReturnType<typeof runMinutes>>) {
  const urls = () => s.entitlement.map((x) => x.url);
  // settleUnanswered replays 8 at a time; a failover leaves thousands to settle, so slices of them go side by side.
  // The load retried every 5xx and unanswered request with its key; those still open at its deadline are tried again.
  const open = run.load.sent.filter((r) => !r.settled);
  const slices = Array.from({ length: 16 }, (_, i) => open.filter((_, j) => j % 16 === i));
  const settle = (slice: typeof run.load.sent) =>
    settleUnanswered(slice, { urls, token: s.token, timeoutMs: DRAIN_MS });
  const unsettled = (await Promise.all(slices.map(settle))).reduce((a, b) => a + b, 0);
  const accepted = run.load.sent.filter((r) => finalAnswer(r)?.status === 200);
  say(`${accepted.length} changes accepted (${unsettled} never settled); waiting for every notification SENT`);
  const drainMs = await waitForQuiescence(s.sql, prefix, accepted.length, DRAIN_MS);
  const ledger = await checkLedger(s.sql, prefix, accepted, [SEND_TYPE]);
  const stored = await readStored(s.sql, prefix);
  const sent = checkSends(run.sends.sent, stored);
  const streams = await checkStreams(stored, run.streams.seqs, 120_000);
  run.streams.stop();
  say("waiting for every endpoint delivery to finish (SENT or FAILED)");
  const endpoints = await checkEndpoints(s.sql, prefix, stored, s.receivers.all, { timeoutMs: ENDPOINT_DRAIN_MS, say });
  const problems = [...ledger.problems, ...sent.problems];
  if (unsettled > 0) problems.push(`${unsettled} grants/revokes never got a definite answer`);
  if (run.unsettledSends > 0) problems.push(`${run.unsettledSends} sends never got a definite answer`);
  for (const k of run.chaos.kills.filter((k) => k.note)) problems.push(`kill of a ${k.kind} ${k.note}`);
  if (drainMs === undefined) problems.push("not every event SENT 5 minutes after the load stopped");
  if (endpoints.total > 0)
    problems.push(
      `endpoint misses after ${(endpoints.drainMs / 1000).toFixed(0)} s of waiting: ${endpoints.byEndpoint.join(", ")}`,
    );
  else say(`every endpoint delivery finished ${(endpoints.drainMs / 1000).toFixed(1)}s after the streams were checked`);
  if (run.streams.oddFrames() > 0) problems.push(`${run.streams.oddFrames()} reset/closed frames on player streams`);
  if (drainMs !== undefined)
    say(`every notification SENT ${(drainMs / 1000).toFixed(1)}s after the last request settled`);
  say(
    `stored ${stored.length} notifications, ${sent.notifications} of them of the ${sent.acknowledged} sends answered ` +
      `202 (${sent.refused} sends refused); ${run.streams.reconnects()} stream reconnects; ` +
      `endpoint misses: ${endpoints.byEndpoint.join(", ")}`,
  );
  const lost = ledger.lost + sent.lost;
  const duplicated = ledger.duplicated + sent.duplicated;
  const unacknowledged = ledger.unacknowledged;
  return {
    accepted,
    lost,
    duplicated,
    unacknowledged,
    streams,
    endpoints,
    problems,
    unsettled: unsettled + run.unsettledSends,
  };
}

/** The sends' ledger (checks.ts) over the sends answered 202; a 202 whose recipients count is off is a problem too. */
function checkSends(sent: SentNotice[], stored: Awaited<ReturnType<typeof readStored>>) {
  const acknowledged = sent.filter((n) => n.answer?.status === 202);
  const refused = sent.filter((n) => n.answer && n.answer.status !== 202);
  const found = sendLedger(
    acknowledged.map((n) => ({ requestId: String(n.answer?.body.request_id), userIds: n.body.user_ids })),
    stored,
    SEND_TYPE,
  );
  const miscounted = acknowledged.filter((n) => n.answer?.body.recipients !== new Set(n.body.user_ids).size);
  if (miscounted.length > 0)
    found.problems.push(`${miscounted.length} sends answered 202 with a wrong recipients count`);
  const refusals = Map.groupBy(refused, (n) => n.answer?.status);
  for (const [status, list] of refusals)
    found.problems.push(`${list.length} sends refused ${status} (not acknowledged)`);
  return { ...found, acknowledged: acknowledged.length, refused: refused.length };
}

/** When and where the run happened, for whoever pastes its figures: start and end (UTC), load averages, cores. */
function machineLine(): string {
  const iso = (t: number) => new Date(t).toISOString().slice(0, 16).replace("T", " ");
  return (
    `ran ${iso(started)}–${iso(Date.now())} UTC on ${cpus().length} CPUs; load average (1, 5, 15 min) ` +
    `${loadAtStart} at the start, ${loadAverage()} at the end; options ${process.argv.slice(2).join(" ") || "(defaults)"}`
  );
}

async function main(): Promise<number> {
  say(
    `${opts.minutes} min, ${opts.streams} streams, ${opts.rate} changes/s, ${opts.sendRate} sends/s; folder ${root}${opts.keep ? " (kept)" : ""}`,
  );
  system = await startSystem(root, say);
  say("everything is up");
  const prefix = `s${Date.now().toString(36)}-`;
  const players = Array.from({ length: opts.streams }, (_, i) => `${prefix}p${i}`);
  const run = await runMinutes(system, prefix, players);
  const checked = await verify(system, prefix, run);
  const kills: Record<string, number> = {};
  for (const k of run.chaos.kills.filter((k) => !k.note)) kills[k.kind] = (kills[k.kind] ?? 0) + 1;
  const verdict: Verdict = {
    minutes: opts.minutes,
    grants: checked.accepted.filter((r) => r.action === "grants").length,
    sends: run.sends.count(),
    kills,
    lost: checked.lost,
    duplicated: checked.duplicated,
    streamGaps: checked.streams.gaps,
    endpointMisses: checked.endpoints.total,
  };
  console.log(`\n${formatMinutes(run.minutes)}\n`);
  console.log(`[soak] ${machineLine()}`);
  for (const p of checked.problems) console.log(`[soak] problem: ${p}`);
  console.log(verdictLine(verdict));
  // A request never settled has an outcome nobody knows: the run proves nothing about it, so it cannot pass. Nor can a
  // change committed that its settled request was never answered 200 for (listed as a problem above).
  return passedVerdict(verdict) && checked.unsettled === 0 && checked.unacknowledged === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`[soak] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
