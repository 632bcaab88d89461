// The points operator commands and retention on real rows: each touches only the rows it names, is safe to run
// twice, prints stored text escaped; retention deletes only old DONE and CANCELLED reservations, never the ledger.
import { describe, expect, test } from "bun:test";
import { POINTS_USAGE, pointsSubcommand, printPointsStats, requeuePoints } from "../../src/entitlement/ops/points.ts";
import { runPointsRetentionOnce } from "../../src/entitlement/work/points/retention.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { useTestDatabase } from "../support/infra.ts";
import { createReplica, ledgerProblems, POINTS_DATABASE, reserve } from "./helpers.ts";

const f = useTestDatabase("ptsops", POINTS_DATABASE);

function capture() {
  const lines: string[] = [];
  return { lines, out: (line: string) => lines.push(line) };
}

/** A FAILED reservation, as the scheduler leaves one after its last attempt. */
async function failed(userId: string, lastError = "boom"): Promise<string> {
  const id = await reserve(f.sql, { userId, amount: 9, executeAt: new Date(Date.now() - 1_000) });
  await f.sql`
    update point_reservations set status = 'FAILED', attempt_count = 10, last_error = ${lastError}
    where reservation_id = ${id}`;
  return id;
}

describe("points requeue", () => {
  test("requeue <id> puts one FAILED reservation back to PENDING, due now, and the scheduler then grants it once", async () => {
    const id = await failed("u1", "line one\nforged line\u001b[2J");
    const other = await failed("u2");
    const out = capture();
    expect(await requeuePoints({ sql: f.sql, out: out.out }, { reservationId: id })).toBe(0);
    expect(out.lines).toHaveLength(1);
    expect(out.lines[0], "stored text is escaped").toContain("last error: line one\\x0aforged line\\x1b[2J");
    const [row] = await f.sql`select status, attempt_count from point_reservations where reservation_id = ${id}`;
    expect(row).toEqual({ status: "PENDING", attempt_count: 0 });
    const [untouched] = await f.sql`select status from point_reservations where reservation_id = ${other}`;
    expect(untouched?.status, "only the named reservation is touched").toBe("FAILED");

    const again = capture();
    expect(await requeuePoints({ sql: f.sql, out: again.out }, { reservationId: id })).toBe(0);
    expect(again.lines).toEqual([`reservation ${id} is PENDING, not FAILED: nothing to do`]);

    await createReplica(f.sql, "r1").scheduler.runOnce();
    expect(await ledgerProblems(f.sql)).toEqual([]);
    const [audit] = await f.sql`
      select count(*)::int as n from point_audit where reservation_id = ${id} and action = 'REQUEUE'`;
    expect(audit?.n).toBe(1);
  });

  test("requeue --failed requeues every FAILED reservation; an unknown id exits 1", async () => {
    await failed("u1");
    await failed("u2");
    const out = capture();
    expect(await requeuePoints({ sql: f.sql, out: out.out }, "failed")).toBe(0);
    expect(out.lines.at(-1)).toBe("requeued 2 FAILED reservation(s)");
    const none = capture();
    expect(await requeuePoints({ sql: f.sql, out: none.out }, "failed")).toBe(0);
    expect(none.lines).toEqual(["no FAILED reservations: nothing to do"]);
    const unknown = crypto.randomUUID();
    const missing = capture();
    expect(await requeuePoints({ sql: f.sql, out: missing.out }, { reservationId: unknown })).toBe(1);
    expect(missing.lines).toEqual([`no point reservation ${unknown}`]);
  });
});

test("points stats counts by status and names the most overdue reservation", async () => {
  await failed("u1");
  const due = await reserve(f.sql, { userId: "u2", amount: 1, executeAt: new Date(Date.now() - 5_000) });
  await reserve(f.sql, { userId: "u3", amount: 1, executeAt: new Date(Date.now() + 60_000) });
  const out = capture();
  expect(await printPointsStats({ sql: f.sql, out: out.out })).toBe(0);
  expect(out.lines[0]).toBe("point reservations: PENDING=2 PROCESSING=0 DONE=0 FAILED=1 CANCELLED=0");
  expect(out.lines[1]).toStartWith(`due now: 1, the most overdue ${due} `);
  expect(out.lines[2]).toBe("failed reservations: 1 (see `points requeue`)");
});

test("the points command: usage errors exit 2, a good command 0", async () => {
  const env = { DATABASE_URL: f.db.url };
  for (const args of [[], ["stats", "x"], ["requeue"], ["requeue", "not-a-uuid"], ["purge"]]) {
    expect(await pointsSubcommand(env).run(args), `points ${args.join(" ")}`).toBe(2);
  }
  expect(POINTS_USAGE).toContain("requeue --failed");
  expect(await pointsSubcommand(env).run(["stats"])).toBe(0);
});

test("retention deletes old DONE and CANCELLED reservations only, and keeps the ledger and balances", async () => {
  const done = await reserve(f.sql, { userId: "u1", amount: 5, executeAt: new Date(Date.now() - 1) });
  await createReplica(f.sql, "r1").scheduler.runOnce();
  const cancelled = await reserve(f.sql, { userId: "u1", amount: 5, executeAt: new Date(Date.now() + 60_000) });
  await f.sql`update point_reservations set status = 'CANCELLED' where reservation_id = ${cancelled}`;
  const pending = await reserve(f.sql, { userId: "u1", amount: 5, executeAt: new Date(Date.now() + 60_000) });
  const fail = await failed("u1");
  const recent = await reserve(f.sql, { userId: "u2", amount: 1, executeAt: new Date(Date.now() - 1) });
  await f.sql`update point_reservations set updated_at = now() - interval '40 days' where reservation_id <> ${recent}`;
  await createReplica(f.sql, "r1").scheduler.runOnce();

  const settings = { cleanupIntervalMs: 1000, reservationTtlMs: 30 * 86_400_000, batchSize: 1 };
  const deleted = await runPointsRetentionOnce({ sql: f.sql, log: silentLogger, now: () => new Date(), settings });
  expect(deleted).toBe(2);
  const left = await f.sql<{ reservation_id: string }[]>`select reservation_id from point_reservations order by 1`;
  expect(left.map((r) => r.reservation_id).sort()).toEqual([pending, fail, recent].sort());
  expect(left.map((r) => r.reservation_id)).not.toContain(done);
  const [kept] = await f.sql`
    select (select count(*) from point_transactions)::int as txs, (select balance::int from point_balances
      where user_id = 'u1') as balance`;
  expect(kept).toEqual({ txs: 2, balance: 5 });
});
