// One scenario from start to verdict: load, fault, more load, stop, settle the unanswered requests by idempotent
// replay, wait for quiescence, then check the answers against the model and the tables against the guarantees (docs/failure-modes.md).
import { checkAnswers } from "./answers.ts";
import { send } from "./client.ts";
import { checkLedger, slowestSent, waitForQuiescence, watchCatchUp } from "./ledger.ts";
import { type Recorded, startLoad } from "./load.ts";
import { checkMatches, type MatchLoad, startMatchLoad, waitForMatches } from "./matches.ts";
import type { ScenarioResult } from "./report.ts";
import type { DrillContext, Scenario } from "./scenarios.ts";
import { startScheduledLoad } from "./scheduled.ts";
import type { Service } from "./services.ts";
import { settleUnanswered } from "./settle.ts";

/** No request may take longer than this, whatever the fault: the service's own request timeout is 10s. */
export const LATENCY_BOUND_MS = 12_000;
const RECOVERY_TIMEOUT_MS = 60_000;
/** A probe request after recovery; a well service answers a grant in milliseconds (this is for a loaded machine). */
const PROBE_BOUND_MS = 3_000;
/** Concurrent probes: more than the pool (DATABASE_POOL_MAX, 10 by default), so every pooled connection is used. */
const PROBE_WIDTH = 16;
const PROBE_ROUNDS = 3;

export type RunDeps = Omit<DrillContext, "ended" | "problem" | "say"> & {
  prefix: string;
  natsUrl: string;
  log: (line: string) => void;
};

const liveUrls = (deps: RunDeps) => () => {
  const up = deps.fleet.replicas.filter((s) => s.running()).map((s) => s.url);
  return up.length > 0 ? up : deps.fleet.replicas.map((s) => s.url);
};

export async function runScenario(scenario: Scenario, deps: RunDeps): Promise<ScenarioResult> {
  const problems: string[] = [];
  const faultEnds: Date[] = [];
  const catchUps: Promise<number | undefined>[] = [];
  const started = Date.now();
  const say = (line: string) => deps.log(`  +${((Date.now() - started) / 1000).toFixed(1)}s ${line}`);
  const ctx: DrillContext = {
    ...deps,
    say,
    problem: (line) => problems.push(line),
    ended: () => {
      const at = new Date();
      faultEnds.push(at);
      catchUps.push(watchCatchUp(deps.sql, deps.prefix, at, RECOVERY_TIMEOUT_MS));
      say("fault over");
    },
  };
  const { load, matches, scheduled } = startLoads(deps);
  await Bun.sleep(deps.scale.beforeMs);
  try {
    await scenario.inject(ctx);
  } catch (error) {
    problems.push(`fault injection failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  await Bun.sleep(deps.scale.afterMs);
  await Promise.all([load.stop(), scheduled.stop()]);
  say(`load stopped after ${load.sent.length} requests, ${scheduled.count()}`);

  problems.push(...deps.fleet.problems.splice(0));
  for (const s of deps.fleet.all) if (!s.running()) await s.start().catch((e) => problems.push(String(e)));
  const result = await verify(scenario.name, deps, load.sent, { faultEnds, catchUps, problems, matches });
  const x = await scheduled.check(deps.sql, {
    urls: liveUrls(deps),
    timeoutMs: RECOVERY_TIMEOUT_MS,
    latencyBoundMs: LATENCY_BOUND_MS,
    log: deps.log,
  });
  return {
    ...result,
    events: result.events + x.events,
    notifications: result.notifications + x.notifications,
    lost: result.lost + x.lost,
    duplicated: result.duplicated + x.duplicated,
    points: x.points,
    problems: [...result.problems, ...x.problems],
  };
}

/** The grants, the matches and the scheduler's work that run through a scenario, started. */
function startLoads(deps: RunDeps) {
  const load = startLoad({
    prefix: deps.prefix,
    urls: () => deps.fleet.replicas.map((s) => s.url),
    token: deps.fleet.token,
    workers: 4,
    pauseMs: 40,
    random: deps.random,
  });
  // Matches beside the grants, about 15 a second: light enough to leave the quick drill's timing as it was.
  const matches = startMatchLoad({ natsUrl: deps.natsUrl, prefix: deps.prefix, pauseMs: 60, settleMs: 60_000 });
  // Expiring bundles and point reservations: the scheduler's work, due while the fault is on.
  const scheduled = startScheduledLoad({
    prefix: deps.prefix,
    urls: () => deps.fleet.replicas.map((s) => s.url),
    token: deps.fleet.token,
    random: deps.random,
  });
  return { load, matches, scheduled };
}

/** Probes, settles, waits for quiescence, then holds the answers and the tables against the model and the guarantees. */
async function verify(
  name: string,
  deps: RunDeps,
  sent: Recorded[],
  fault: { faultEnds: Date[]; catchUps: Promise<number | undefined>[]; problems: string[]; matches: MatchLoad },
): Promise<Omit<ScenarioResult, "points">> {
  const { problems } = fault;
  const acked = await fault.matches.stop();
  sent.push(...(await probeReplicas(deps, problems)));
  const settle = { urls: liveUrls(deps), token: deps.fleet.token, timeoutMs: RECOVERY_TIMEOUT_MS };
  const unsettled = await settleUnanswered(sent, settle);
  if (unsettled > 0) problems.push(`${unsettled} requests still without a definite answer after 60s of replays`);
  const answers = checkAnswers(sent, LATENCY_BOUND_MS);
  const drainMs = await waitForQuiescence(deps.sql, deps.prefix, answers.accepted.length, RECOVERY_TIMEOUT_MS);
  if (drainMs === undefined) problems.push(`not quiescent ${RECOVERY_TIMEOUT_MS / 1000}s after the load stopped`);
  if ((await waitForMatches(deps.sql, deps.prefix, acked, RECOVERY_TIMEOUT_MS)) === undefined)
    problems.push(`matches not all SENT ${RECOVERY_TIMEOUT_MS / 1000}s after the load stopped`);
  const ledger = await checkLedger(deps.sql, deps.prefix, answers.accepted);
  const match = await checkMatches(deps.sql, deps.prefix, acked);
  const recoveryMs = await recoveryOf(fault.faultEnds, fault.catchUps, sent, problems);
  const slowestSentMs = await slowestSent(deps.sql, deps.prefix);
  deps.log(
    `  checked: ${answers.accepted.length} accepted, ${ledger.events} events; ` +
      `${match.events} matches, ${match.notifications} MatchFound`,
  );
  return {
    name,
    requests: answers.requests,
    accepted: answers.accepted.length,
    unanswered: answers.unanswered,
    faults: answers.faults,
    events: ledger.events,
    notifications: ledger.notifications,
    lost: ledger.lost + match.lost,
    duplicated: ledger.duplicated + match.duplicated,
    maxLatencyMs: answers.maxLatencyMs,
    recoveryMs,
    slowestSentMs,
    drainMs,
    problems: [...problems, ...answers.problems, ...ledger.problems, ...match.problems],
  };
}

/**
 * Recovered means healthy, not merely answering: bursts wider than the pool reach every pooled connection, and each
 * grant must be answered 200 at once. A connection left broken by the fault (it hangs until connect_timeout) fails it.
 * Each burst dials its own connections (a fetch session of its own): the load's idle keep-alive sockets, which the
 * service's idle timeout may be closing at that very moment, are the drill's own state, not the service's health.
 */
async function probeReplicas(deps: RunDeps, problems: string[]): Promise<Recorded[]> {
  const probes: Recorded[] = [];
  const probe = async (replica: Service, n: number, session: Bun.FetchSession) => {
    const user = `${deps.prefix}probe-${replica.label}-${n}`;
    const body = { user_id: user, stock_keeping_unit: "sku-probe", reason: "drill", purchase_id: "probe" };
    const request = { action: "grants" as const, key: `${user}-key`, body };
    const startedAt = Date.now();
    const result = await send(replica.url, deps.fleet.token, request, PROBE_BOUND_MS * 5, session);
    const record: Recorded = {
      kind: "fresh",
      ...request,
      replica: replica.url,
      startedAt,
      ...result,
      expect: { status: 200, version: 0 },
    };
    probes.push(record);
    return result.answer?.status === 200 && result.ms <= PROBE_BOUND_MS ? undefined : result;
  };
  const burst = async (replica: Service, round: number) => {
    const session = new Bun.FetchSession();
    try {
      const ids = Array.from({ length: PROBE_WIDTH }, (_, i) => round * PROBE_WIDTH + i);
      return (await Promise.all(ids.map((n) => probe(replica, n, session)))).filter((r) => r !== undefined);
    } finally {
      session.close();
    }
  };
  for (const replica of deps.fleet.replicas) {
    for (let round = 0; round < PROBE_ROUNDS; round++) {
      const bad = await burst(replica, round);
      if (bad.length === 0) continue;
      const worst = bad.map((r) => `${r.answer ? r.answer.status : r.error} after ${Math.round(r.ms)}ms`).join(", ");
      problems.push(
        `${replica.label} not healthy after recovery: ${bad.length} of ${PROBE_WIDTH} probes failed: ${worst}`,
      );
      break;
    }
  }
  return probes;
}

/** Worst fault: the later of "the API answered 200 again" and "everything committed before the fault end is SENT". */
async function recoveryOf(
  faultEnds: Date[],
  catchUps: Promise<number | undefined>[],
  sent: { startedAt: number; ms: number; answer?: { status: number } }[],
  problems: string[],
): Promise<number | undefined> {
  const pipeline = await Promise.all(catchUps);
  let worst: number | undefined;
  faultEnds.forEach((end, i) => {
    const t = end.getTime();
    const firstOk = sent.filter((r) => r.startedAt >= t && r.answer?.status === 200).map((r) => r.startedAt + r.ms - t);
    const api = firstOk.length ? Math.min(...firstOk) : undefined;
    const caughtUp = pipeline[i];
    if (api === undefined) problems.push(`no 200 answer after fault ${i + 1} ended`);
    if (caughtUp === undefined) problems.push(`events before fault ${i + 1} not all SENT within 60s`);
    worst = Math.max(worst ?? 0, api ?? 0, caughtUp ?? 0);
  });
  return worst;
}
