// A bulk file applied through the command path on a real database: the preview changes nothing; applying changes
// exactly the rows that will change, with one audit row, event and idempotency record each; applying the same file
// again changes nothing; and a shell run killed with SIGKILL halfway, then run again, ends with every valid row applied
// exactly once.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
// The replay check of a stored reply validates its date-time strings with the formats Elysia registers when it is
// loaded; the executable always loads it (app.ts), and so must a test that runs commands without the app.
import "elysia";
import pino from "pino";
import { applyBulk, type BulkDeps } from "../../src/entitlement/features/bulk/apply.ts";
import { readBulkFile } from "../../src/entitlement/features/bulk/csv.ts";
import { planBulk, planCounts } from "../../src/entitlement/features/bulk/plan.ts";
import { countOutcomes } from "../../src/entitlement/features/bulk/result-csv.ts";
import { createCommandMetrics } from "../../src/entitlement/features/commands/metrics.ts";
import { executeCommand } from "../../src/entitlement/features/entitlements/service.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createRegistry } from "../../src/shared/metrics.ts";
import { newTraceId } from "../../src/shared/trace-context.ts";
import { natsUrl, useTestDatabase } from "../support/infra.ts";
import { runCommand } from "../support/process.ts";
import { waitUntil } from "../support/wait.ts";

setDefaultTimeout(180_000);

const MAIN = join(resolve(import.meta.dir, "../.."), "src/entitlement/main.ts");
const HEADER = "user_id,stock_keeping_unit,action,reason,expires_at";

const f = useTestDatabase("bulk", { service: "entitlement", poolMax: 4 });
let deps: BulkDeps;
let dir: string;

beforeAll(async () => {
  deps = {
    sql: f.sql,
    log: silentLogger,
    now: () => new Date(),
    idempotencyTtlMs: 24 * 3_600_000,
    statementTimeoutMs: 5_000,
    metrics: createCommandMetrics(createRegistry("entitlement")),
  };
  dir = mkdtempSync(join(tmpdir(), "bulk-test-"));
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const bytes = (text: string) => new TextEncoder().encode(text);
const count = async (query: Promise<{ n: number }[]>) => (await query)[0]?.n ?? 0;

async function grantDirectly(user: string, sku: string): Promise<void> {
  const file = readBulkFile(bytes(`${HEADER}\n${user},${sku},grant,setup,\n`));
  await applyBulk(deps, await planBulk(f.sql, file, new Date()), { caller: "setup", traceId: "t", concurrency: 1 });
}

test("preview counts, apply, apply again: each valid row changes once, the rest never", async () => {
  await grantDirectly("b-u1", "already");
  const text = [
    HEADER,
    "b-u1,sword,grant,compensation,",
    "b-u1,shield,grant,compensation,",
    "b-u1,already,grant,compensation,",
    "b-u2,sword,revoke,refund,",
    "b-u3,sword,grant,compensation,2030-01-01T00:00:00Z",
    "b-u3,sword,revoke,twice,",
    "b-u4,,grant,compensation,",
  ].join("\r\n");
  const file = readBulkFile(bytes(text));
  const plan = await planBulk(f.sql, file, new Date());
  expect(planCounts(plan)).toEqual({ rows: 7, willChange: 4, unchanged: 1, invalid: 2 });
  const audit = () => count(f.sql`select count(*)::int as n from entitlement_audit where caller = 'console:bulk'`);
  expect(await audit(), "a preview changes nothing").toBe(0);

  const run = { caller: "console:bulk", traceId: "bulk-test", concurrency: 3 };
  const progress: number[] = [];
  const first = await applyBulk(deps, plan, { ...run, onProgress: (done) => progress.push(done) });
  expect(first.map((r) => [r.line, r.outcome])).toEqual([
    [2, "changed"],
    [3, "changed"],
    [4, "unchanged"],
    [5, "changed"],
    [6, "changed"],
    [7, "invalid"],
    [8, "invalid"],
  ]);
  expect(progress.at(-1), "progress reaches every row").toBe(7);
  expect(await audit()).toBe(4);
  const [u3] = await f.sql<{ expires_at: Date }[]>`
    select expires_at from entitlements where user_id = 'b-u3' and stock_keeping_unit = 'sword'`;
  expect(u3?.expires_at.toISOString()).toBe("2030-01-01T00:00:00.000Z");

  const again = await applyBulk(deps, await planBulk(f.sql, file, new Date()), run);
  expect(again.filter((r) => r.outcome === "failed").map((r) => r.error)).toEqual([]);
  expect(countOutcomes(again)).toEqual({ changed: 0, already_applied: 4, unchanged: 1, invalid: 2, failed: 0 });
  expect(await audit(), "applying the same file again changes nothing").toBe(4);
  const events = await count(f.sql`select count(*)::int as n from outbox_events where aggregate_key like 'b-u%'`);
  expect(events, "one event per change, the setup grant included").toBe(5);
});

test("a run's log lines carry its trace id", async () => {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const file = readBulkFile(bytes(`${HEADER}\nt-u1,sword,grant,compensation,\nt-u2,,grant,compensation,\n`));
  const traceId = newTraceId();
  const run = { caller: "console:alice", traceId, concurrency: 1 };
  await applyBulk({ ...deps, log }, await planBulk(f.sql, file, new Date()), run);
  expect(lines.map((l) => l.msg)).toEqual(["bulk run started", "bulk run finished"]);
  expect(
    lines.map((l) => l.trace_id),
    "every line of the run names its trace",
  ).toEqual([traceId, traceId]);
  expect(lines[1], "the end says what each row came to").toMatchObject({ changed: 1, invalid: 1, failed: 0 });
  const [audit] = await f.sql<{ trace_id: string }[]>`select trace_id from entitlement_audit where user_id = 't-u1'`;
  expect(audit?.trace_id).toBe(traceId);
});

test("the same file applied from another seat after a revoke replays instead of granting again", async () => {
  const text = `${HEADER}\ns-u1,sword,grant,compensation,\ns-u1,shield,grant,compensation,\ns-u2,sword,grant,compensation,\n`;
  const file = readBulkFile(bytes(text));
  const applyAs = async (caller: string) =>
    applyBulk(deps, await planBulk(f.sql, file, new Date()), { caller, traceId: "seat-test", concurrency: 2 });
  const first = await applyAs("console:alice");
  expect(first.map((r) => r.outcome)).toEqual(["changed", "changed", "changed"]);
  const body = { user_id: "s-u2", stock_keeping_unit: "sword", reason: "refund", purchase_id: "p-refund" };
  const revoked = await executeCommand(deps, {
    action: "REVOKE",
    body,
    idempotencyKey: "refund-s-u2",
    traceId: "seat-test",
    caller: "support",
  });
  expect(revoked.status).toBe(200);

  for (const caller of ["cli:bulk", "console:bob"]) {
    const again = await applyAs(caller);
    expect(
      again.map((r) => r.outcome),
      `${caller}: the file's rows replay, whoever applies it`,
    ).toEqual(["already_applied", "already_applied", "already_applied"]);
  }
  const [u2] = await f.sql<{ status: string }[]>`
    select status from entitlements where user_id = 's-u2' and stock_keeping_unit = 'sword'`;
  expect(u2?.status, "the revoke made after the first apply stays").toBe("REVOKED");
  const audit = await f.sql<{ row: string }[]>`
    select caller || ' ' || action || ' ' || user_id || '/' || stock_keeping_unit as row
    from entitlement_audit where user_id like 's-u%' order by row`;
  expect(
    audit.map((a) => a.row),
    "the audit names the real callers, and nothing after the revoke",
  ).toEqual([
    "console:alice GRANT s-u1/shield",
    "console:alice GRANT s-u1/sword",
    "console:alice GRANT s-u2/sword",
    "support REVOKE s-u2/sword",
  ]);
});

test("a shell run killed with SIGKILL halfway, run again, applies every valid row exactly once", async () => {
  const rows = Array.from({ length: 1500 }, (_, i) => `k-u${i},item-${i % 3},grant,outage,`);
  const path = join(dir, "compensation.csv");
  writeFileSync(path, [HEADER, ...rows, "k-bad,,grant,outage,"].join("\n"));
  const env = { ...process.env, DATABASE_URL: f.db.url, NATS_URL: await natsUrl(), LOG_LEVEL: "silent" };
  const applied = () => count(f.sql`select count(*)::int as n from entitlement_audit where caller = 'cli:bulk'`);

  const child = Bun.spawn([process.execPath, MAIN, "bulk", "apply", path], { env, stdout: "pipe", stderr: "pipe" });
  await waitUntil(async () => (await applied()) >= 100, "the first run to apply some rows", 120_000, 20);
  child.kill("SIGKILL");
  await child.exited;
  const before = await applied();
  expect(before, "killed before the end").toBeLessThan(1500);

  const rerun = await runCommand([process.execPath, MAIN, "bulk", "apply", path], { env, timeoutMs: 150_000 });
  expect(rerun.code, rerun.stderr).toBe(0);
  expect(rerun.stderr, "progress in the shell, to the last row, the invalid one apart").toMatch(
    /1501\/1501 rows done: changed \d+, already applied \d+, unchanged 0, invalid 1, failed 0/,
  );
  // Calls the server had received when the client died still commit, so the first run did at least `before` rows.
  const preview = /1501 rows: (\d+) will change, (\d+) already in that state, 1 invalid/.exec(rerun.stdout);
  expect(Number(preview?.[1]) + Number(preview?.[2])).toBe(1500);
  expect(Number(preview?.[2])).toBeGreaterThanOrEqual(before);
  const done = /changed (\d+), already applied (\d+), unchanged 0, invalid 1, failed 0/.exec(rerun.stdout);
  expect(Number(done?.[1]) + Number(done?.[2]), "every valid row is done").toBe(1500);
  const perRow = await f.sql<{ n: number; rows: number }[]>`
    select count(*)::int as rows, max(n)::int as n from (
      select count(*) as n from entitlement_audit where caller = 'cli:bulk' group by user_id, stock_keeping_unit) c`;
  expect(perRow[0], "every valid row has exactly one audit row").toEqual({ rows: 1500, n: 1 });
  const result = readFileSync(`${path}.result.csv`, "utf8").trim().split("\r\n");
  expect(result).toHaveLength(1502);
  expect(result.at(-1)).toContain(",invalid,,stock_keeping_unit is required");
});

test("the shell refuses a malformed file with its line, and --dry-run changes nothing", async () => {
  const env = { ...process.env, DATABASE_URL: f.db.url, NATS_URL: await natsUrl(), LOG_LEVEL: "silent" };
  const bad = join(dir, "bad.csv");
  writeFileSync(bad, `${HEADER}\nu,s,grant,"open\n`);
  const refused = await runCommand([process.execPath, MAIN, "bulk", "apply", bad], { env });
  expect(refused.code).toBe(3);
  expect(refused.stderr).toContain("not valid CSV (line 2)");
  const good = join(dir, "dry.csv");
  writeFileSync(good, `${HEADER}\nd-u1,s,grant,r,\n`);
  const dry = await runCommand([process.execPath, MAIN, "bulk", "apply", good, "--dry-run"], { env });
  expect(dry.code, dry.stderr).toBe(0);
  expect(dry.stdout).toContain("1 rows: 1 will change, 0 already in that state, 0 invalid");
  expect(await count(f.sql`select count(*)::int as n from entitlements where user_id = 'd-u1'`)).toBe(0);
  const usage = await runCommand([process.execPath, MAIN, "bulk", "apply"], { env });
  expect(usage.code).toBe(2);
});

test("the shell says what each row came to, and the run's own trace, on its audit rows and events", async () => {
  const env = { ...process.env, DATABASE_URL: f.db.url, NATS_URL: await natsUrl(), LOG_LEVEL: "silent" };
  const path = join(dir, "counts.csv");
  const rows = ["c-u1,sword,grant,r,", "c-u2,sword,grant,r,", "c-u3,,grant,r,", "c-u4,sword,give,r,"];
  writeFileSync(path, [HEADER, ...rows].join("\n"));
  const run = await runCommand([process.execPath, MAIN, "bulk", "apply", path], { env });
  expect(run.code, run.stderr).toBe(0);
  const progress = run.stderr.trim().split("\n").at(-1);
  expect(progress, "progress counts by outcome, invalid rows apart").toBe(
    "4/4 rows done: changed 2, already applied 0, unchanged 0, invalid 2, failed 0",
  );
  const traceId = /; trace ([0-9a-f]{32})$/m.exec(run.stdout)?.[1];
  expect(traceId, `a W3C trace id in the summary: ${run.stdout}`).toMatch(/^(?!0{32})[0-9a-f]{32}$/);
  const audit = await f.sql<{ trace_id: string }[]>`
    select distinct trace_id from entitlement_audit where user_id like 'c-u%'`;
  expect(
    audit.map((a) => a.trace_id),
    "every audit row of the run carries its trace",
  ).toEqual([traceId as string]);
  const events = await f.sql<{ traceparent: string | null }[]>`
    select traceparent from outbox_events where aggregate_key like 'c-u%'`;
  expect(events).toHaveLength(2);
  for (const e of events) expect(e.traceparent, "its events continue the run's trace").toContain(`-${traceId}-`);
});

test("a CSV file that is not there is one clear line naming it, with the bad-file exit code", async () => {
  const env = { ...process.env, DATABASE_URL: f.db.url, NATS_URL: await natsUrl(), LOG_LEVEL: "silent" };
  const missing = join(dir, "no-such-file.csv");
  const run = await runCommand([process.execPath, MAIN, "bulk", "apply", missing, "--dry-run"], { env });
  expect(run.code).toBe(3);
  expect(run.stderr.trim()).toBe(`entitlement bulk: cannot read ${missing}: no such file`);
  const folder = await runCommand([process.execPath, MAIN, "bulk", "apply", dir], { env });
  expect(folder.code).toBe(3);
  expect(folder.stderr.trim()).toBe(`entitlement bulk: cannot read ${dir}: it is a directory`);
});
