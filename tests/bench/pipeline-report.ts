// The pipeline-cost phase's report: the table "core-ms per grant, commit → SENT" by process (printed by the bench),
// its figures for the bench's main table, and the statements per event for the JSON.

import type { PipelineResult, PipelineRun } from "./pipeline.ts";
import { PROCESSES } from "./pipeline-cpu.ts";
import type { Figure } from "./report.ts";

const LABELS: Record<string, string> = {
  entitlement: "Entitlement service (relay)",
  "pg: entitlement": "PostgreSQL backends of Entitlement",
  notification: "Notification service (consumer, delivery)",
  "pg: notification": "PostgreSQL backends of Notification",
  "pg: background": "PostgreSQL background (postmaster, WAL writer, checkpointer, autovacuum, …)",
  "nats-server": "nats-server",
  total: "total",
};

/** The table "core-ms per grant, commit → SENT" by process, with statements per event below it. */
export function renderPipelineTable(r: PipelineResult): string {
  const head = [
    "core-ms per grant, commit → SENT",
    `${r.options.rate}/s (${r.steady.events})`,
    `backlog (${r.backlog.events})`,
    "idle, per second",
  ];
  const rows = [...PROCESSES, "total"].map((p) => [
    LABELS[p] ?? p,
    (r.steady.coreMs[p] ?? 0).toFixed(3),
    (r.backlog.coreMs[p] ?? 0).toFixed(3),
    (r.idleCoreMsPerSecond[p] ?? 0).toFixed(1),
  ]);
  rows.push([
    "statements per event: Entitlement",
    ...[r.steady, r.backlog].map((x) => x.statements.entitlement.toFixed(2)),
    "",
  ]);
  rows.push([
    "statements per event: Notification",
    ...[r.steady, r.backlog].map((x) => x.statements.notification.toFixed(2)),
    "",
  ]);
  const y = r.yardstick;
  rows.push([
    `the yardstick at ${y.rate}/s: pgbench of the least a grant writes (cluster + client)`,
    `${y.total.toFixed(3)} (${y.cluster.toFixed(3)} + ${y.client.toFixed(3)})`,
    "",
    "",
  ]);
  rows.push(["pipeline ÷ the yardstick (target ≤ 3)", pipelineVsYardstick(r).toFixed(2), "", ""]);
  rows.push([
    "commit → SENT p50 / p99 ms; backlog events/s",
    `${r.steady.p50Ms.toFixed(1)} / ${r.steady.p99Ms.toFixed(1)}`,
    r.backlog.eventsPerSecond.toFixed(0),
    "",
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** The statements of each role per event, most frequent first (for the JSON and a look at what to cut). */
export function statementBreakdown(
  run: PipelineRun,
): { role: string; perEvent: number; msPerEvent: number; query: string }[] {
  return run.window.statements.map((s) => ({
    role: s.role,
    perEvent: s.calls / run.events,
    msPerEvent: s.ms / run.events,
    query: s.query.slice(0, 160),
  }));
}

/** The pipeline's core-ms per grant at the steady rate, commit → SENT, over the yardstick's at that rate. */
export const pipelineVsYardstick = (r: PipelineResult) => (r.steady.coreMs.total ?? 0) / r.yardstick.total;

/** The figures of the bench's main table, and the JSON without the raw windows. */
export function pipelineRows(r: PipelineResult): { figures: Figure[]; json: unknown } {
  const rate = r.options.rate;
  const figures: Figure[] = [
    {
      name: `pipeline core-ms per grant at ${rate}/s, commit → SENT (all processes)`,
      value: r.steady.coreMs.total ?? 0,
      unit: "ms",
    },
    {
      name: `the yardstick's core-ms per grant at ${rate}/s (pgbench of the least a grant writes, cluster + client)`,
      value: r.yardstick.total,
      unit: "ms",
    },
    {
      name: `pipeline ÷ the yardstick at ${rate}/s (core-ms per grant, commit → SENT)`,
      value: pipelineVsYardstick(r),
      unit: "",
      target: { op: "<=" as const, value: 3 },
    },
    {
      name: `pipeline core-ms per grant, backlog of ${r.backlog.events}`,
      value: r.backlog.coreMs.total ?? 0,
      unit: "ms",
    },
    {
      name: `pipeline statements per event at ${rate}/s (Entitlement + Notification)`,
      value: r.steady.statements.entitlement + r.steady.statements.notification,
      unit: "",
    },
    {
      name: `pipeline commit → SENT p99 at ${rate}/s (p50 ${r.steady.p50Ms.toFixed(1)} ms)`,
      value: r.steady.p99Ms,
      unit: "ms",
    },
    {
      name: `pipeline backlog of ${r.backlog.events}: commit → all SENT`,
      value: r.backlog.eventsPerSecond,
      unit: "events/s",
    },
    // What each service burns while nothing happens (timers, polls): it may round to 0 over a short window.
    ...(["entitlement", "notification"] as const).map((p) => ({
      name: `idle core-ms per second: ${p} (${r.options.idleSeconds} s window)`,
      value: r.idleCoreMsPerSecond[p] ?? 0,
      unit: "ms/s",
      target: { op: "<=" as const, value: 5 },
    })),
  ];
  const run = (x: PipelineRun) => ({
    ...x,
    window: undefined,
    cpuSeconds: x.window.cpuSeconds,
    breakdown: statementBreakdown(x),
  });
  return { figures, json: { ...r, steady: run(r.steady), backlog: run(r.backlog) } };
}
