// pgbench of a script at a client count and duration: the grant's write set (grant.pgbench.sql, the default) against
// the services' database while they run, the service's own call (grant-call.pgbench.sql) and the database's pace
// (pace-grant.pgbench.sql, api-alone.ts). Latencies come from its per-transaction log. A run that measured nothing
// (pgbench failed, e.g. a client could not connect, or it finished no transaction in the time) is not an error of the
// bench: its result carries pgbench's own words in `unmeasured`, and the report prints them instead of a figure.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { requirePostgresTool } from "../../tools/infra/postgres.ts";
import type { ThroughputResult } from "./grants.ts";
import { percentile } from "./stats.ts";

export const PGBENCH_SCRIPT = join(import.meta.dir, "grant.pgbench.sql");

export async function runPgbench(args: {
  databaseUrl: string;
  clients: number;
  seconds: number;
  /** Default grant.pgbench.sql. */
  script?: string;
  /** Default prepared; the pace runs in pgbench's simple mode, as its yardstick is defined. */
  mode?: "prepared" | "simple";
  /** Transactions a second for all clients together (pgbench -R); default as fast as they go. */
  rate?: number;
}): Promise<ThroughputResult & { unmeasured?: string; clientCpuSeconds: number }> {
  const dir = mkdtempSync(join(tmpdir(), "bench-pgbench-"));
  try {
    const proc = Bun.spawn(
      [
        requirePostgresTool("pgbench"),
        "-n",
        "-M",
        args.mode ?? "prepared",
        "-c",
        String(args.clients),
        "-j",
        String(Math.min(args.clients, 2)),
        "-T",
        String(args.seconds),
        ...(args.rate ? ["-R", String(args.rate)] : []),
        "-f",
        args.script ?? PGBENCH_SCRIPT,
        "-l",
        `--log-prefix=${join(dir, "tx")}`,
        args.databaseUrl,
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    const [code, out, err] = await Promise.all([
      proc.exited,
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
    ]);
    const tps = Number(out.match(/tps = ([\d.]+) \(without initial connection time\)/)?.[1]);
    const failed = Number(out.match(/number of failed transactions: (\d+)/)?.[1] ?? 0);
    const unmeasured = whyUnmeasured(code, tps, out, err);
    const latencies = transactionLatencies(dir);
    const usage = proc.resourceUsage();
    return {
      clientCpuSeconds: usage ? (Number(usage.cpuTime.user) + Number(usage.cpuTime.system)) / 1e6 : 0,
      connections: args.clients,
      rps: tps,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      ok: latencies.length,
      non2xx: 0,
      errors: failed,
      ...(unmeasured ? { unmeasured } : {}),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The latency of every transaction pgbench logged in `dir` (its `-l` files, microseconds in the third field), in ms, sorted. */
function transactionLatencies(dir: string): number[] {
  const latencies: number[] = [];
  for (const file of readdirSync(dir)) {
    for (const line of readFileSync(join(dir, file), "utf8").split("\n")) {
      const micros = Number(line.split(" ")[2]);
      if (line && Number.isFinite(micros)) latencies.push(micros / 1000);
    }
  }
  return latencies.sort((a, b) => a - b);
}

/** Why a pgbench run gave no throughput, in pgbench's own words; undefined when it measured one. */
export function whyUnmeasured(code: number, tps: number, stdout: string, stderr: string): string | undefined {
  if (code === 0 && tps > 0) return undefined;
  const said = (text: string) => text.trim().split("\n").filter(Boolean).slice(-3).join(" | ");
  const processed = stdout.match(/number of transactions actually processed: \S+/)?.[0];
  const words = [said(stderr), processed].filter(Boolean).join(" | ") || "no output";
  return code !== 0 ? `pgbench exited ${code}: ${words}` : `pgbench measured no throughput: ${words}`;
}
