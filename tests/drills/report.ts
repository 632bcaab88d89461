// The drill's result table, one row per scenario, and the findings under it.
import type { PointsReport } from "./points-ledger.ts";

export type ScenarioResult = {
  name: string;
  requests: number;
  accepted: number;
  unanswered: number;
  faults: number;
  events: number;
  notifications: number;
  lost: number;
  duplicated: number;
  maxLatencyMs: number;
  /** Fault end → API answers 200 again and every event committed before the fault end is SENT (worst fault). */
  recoveryMs: number | undefined;
  /** The slowest event's commit → its notification SENT, over the whole scenario (so around its faults). */
  slowestSentMs: number | undefined;
  /** Load stopped and settled → every event PUBLISHED and its notification SENT. */
  drainMs: number | undefined;
  /** The point reservations of the load: accepted, DONE, ledger rows, notifications, exact balances. */
  points: PointsReport;
  problems: string[];
};

export const passed = (r: ScenarioResult) => r.lost === 0 && r.duplicated === 0 && r.problems.length === 0;

const seconds = (ms: number | undefined) => (ms === undefined ? "-" : `${(ms / 1000).toFixed(1)}s`);

export function formatTable(results: ScenarioResult[]): string {
  const header = [
    "scenario",
    "requests",
    "200s",
    "unanswered",
    "5xx",
    "events",
    "notifications",
    "lost",
    "duplicated",
    "reservations",
    "DONE",
    "point txns",
    "PointsGranted",
    "balances",
    "max latency",
    "recovery",
    "slowest SENT",
    "drain",
    "result",
  ];
  const rows = results.map((r) => [
    r.name,
    String(r.requests),
    String(r.accepted),
    String(r.unanswered),
    String(r.faults),
    String(r.events),
    String(r.notifications),
    String(r.lost),
    String(r.duplicated),
    String(r.points.reservations),
    String(r.points.done),
    String(r.points.transactions),
    String(r.points.notifications),
    `${r.points.exactBalances}/${r.points.users}`,
    seconds(r.maxLatencyMs),
    seconds(r.recoveryMs),
    seconds(r.slowestSentMs),
    seconds(r.drainMs),
    passed(r) ? "PASS" : "FAIL",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] as number)).join(" | ")} |`;
  const rule = `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`;
  const findings = results.flatMap((r) => r.problems.map((p) => `  ${r.name}: ${p}`));
  return [line(header), rule, ...rows.map(line), ...(findings.length ? ["", "findings:", ...findings] : [])].join("\n");
}
