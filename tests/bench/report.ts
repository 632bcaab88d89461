// The table and the JSON of one run: every figure, its target and whether it was met.

import { readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { round } from "./stats.ts";

export type Figure = {
  name: string;
  value: number;
  unit: string;
  target?: { op: ">=" | "<="; value: number };
  /** Why the figure could not be measured (the tool's own error); `value` is then NaN. */
  unmeasured?: string;
};

export function machine(versions: { postgres: string; nats: string }) {
  const cpu = readFileSync("/proc/cpuinfo", "utf8").match(/^model name\s*:\s*(.+)$/m)?.[1] ?? cpus()[0]?.model ?? "?";
  return {
    nproc: cpus().length,
    cpu,
    memoryGiB: round(totalmem() / 1024 ** 3, 1),
    postgres: versions.postgres,
    nats: versions.nats,
    bun: Bun.version,
    loadAverage: loadavg().map((l) => round(l, 2)),
  };
}

export const met = (f: Figure) =>
  f.target === undefined || f.unmeasured
    ? undefined
    : f.target.op === ">="
      ? f.value >= f.target.value
      : f.value <= f.target.value;

export function renderTable(figures: Figure[]): string {
  const rows = figures.map((f) => {
    const ok = met(f);
    return [
      f.name,
      `${Number.isFinite(f.value) ? round(f.value, f.value >= 100 ? 0 : 2) : "n/a"} ${f.unit}`,
      f.target ? `${f.target.op} ${f.target.value}` : "",
      f.unmeasured ? `not measured: ${f.unmeasured}` : ok === undefined ? "" : ok ? "met" : "MISSED",
    ];
  });
  const header = ["figure", "value", "target", ""];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** Writes the run's JSON to `out` (default .data/bench/<tag>.json) and to .data/bench/latest.json; returns `out`. */
export function saveReport(r: {
  tag: string;
  options: { out: string | undefined };
  figures: Figure[];
  results: Record<string, unknown>;
  argv: string[];
}): string {
  const dir = resolve(import.meta.dir, "../../.data/bench");
  const out = r.options.out ?? join(dir, `${r.tag}.json`);
  const report = {
    tag: r.tag,
    date: new Date().toISOString(),
    command: `bun run bench ${r.argv.join(" ")}`.trim(),
    options: r.options,
    figures: r.figures,
    results: r.results,
  };
  const text = `${JSON.stringify(report, null, 2)}\n`;
  writeFileSync(out, text);
  writeFileSync(join(dir, "latest.json"), text);
  return out;
}
