// The scheduler running point reservations against a real PostgreSQL: on time and never early, exactly once across
// replicas, a lost claim taken over, the seed's manual checks (a forced double execution, work reserved while the
// scheduler was down), and retries that end FAILED.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { executeReservation } from "../../src/entitlement/write/point-execute.ts";
import { countingSql } from "../support/counting-sql.ts";
import { useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";
import { createReplica, ledgerProblems, POINTS_DATABASE, POINTS_SUBJECT, reserve, statusCounts } from "./helpers.ts";

setDefaultTimeout(90_000);

const f = useTestDatabase("sched", POINTS_DATABASE);

const inMs = (ms: number) => new Date(Date.now() + ms);

type Reservation = { status: string; executed_at: Date | null; execute_at: Date; transaction_id: string | null };

async function reservation(id: string): Promise<Reservation> {
  const [row] = await f.sql<Reservation[]>`
    select status, executed_at, execute_at, transaction_id from point_reservations where reservation_id = ${id}`;
  if (!row) throw new Error(`reservation ${id} is missing`);
  return row;
}

async function balanceOf(userId: string): Promise<number> {
  const [row] = await f.sql<{ balance: number }[]>`
    select balance::float8 as balance from point_balances where user_id = ${userId}`;
  return row?.balance ?? 0;
}

/** Leaves reservation `id` as a replica `lockedBy` that died leaves it: PROCESSING, its lease (due_at) already over. */
async function claimedByDeadReplica(id: string, lockedBy: string, attempts: number): Promise<void> {
  await f.sql`
    update point_reservations set status = 'PROCESSING', locked_by = ${lockedBy}, attempt_count = ${attempts},
      due_at = now() - interval '1 millisecond'
    where reservation_id = ${id}`;
}

describe("one reservation", () => {
  test("is PENDING before execute_at and DONE after it, never early, with its ledger row, audit and event", async () => {
    const replica = createReplica(f.sql, "r1");
    replica.start();
    try {
      const id = await reserve(f.sql, { userId: "u1", amount: 120, executeAt: inMs(1_500) });
      await Bun.sleep(500);
      expect((await reservation(id)).status, "a reservation is not executed before execute_at").toBe("PENDING");
      const done = await waitUntil(async () => {
        const r = await reservation(id);
        return r.status === "DONE" && r;
      }, "the reservation to be DONE");
      expect(done.executed_at?.getTime()).toBeGreaterThanOrEqual(done.execute_at.getTime());
      expect(await balanceOf("u1")).toBe(120);
      const [tx] = await f.sql`select transaction_id, point_amount::int as amount from point_transactions`;
      expect(tx).toEqual({ transaction_id: done.transaction_id, amount: 120 });
      const [event] = await f.sql`select event_type, aggregate_key, subject, payload from outbox_events`;
      expect(event?.subject, "PointsGranted goes to the points subject").toBe(POINTS_SUBJECT);
      expect(event?.payload).toMatchObject({
        user_id: "u1",
        point_amount: 120,
        balance_after: 120,
        reservation_id: id,
      });
      const audit = await f.sql`select action from point_audit where reservation_id = ${id} order by occurred_at`;
      expect(audit.map((a) => a.action)).toEqual(["RESERVE", "EXECUTE"]);
    } finally {
      await replica.stop();
    }
  });

  test("a NOTIFY wakes a scheduler that planned to sleep a minute", async () => {
    // Nothing is due, so the scheduler sleeps for its poll interval (60 s) unless the insert trigger wakes it.
    const replica = createReplica(f.sql, "r1", { pollIntervalMs: 60_000 });
    replica.start();
    try {
      await Bun.sleep(300);
      const id = await reserve(f.sql, { userId: "u1", amount: 5, executeAt: inMs(200) });
      await waitUntil(async () => (await reservation(id)).status === "DONE", "the woken scheduler", 20_000);
    } finally {
      await replica.stop();
    }
  });
});

describe("an idle scheduler", () => {
  test("with nothing due it makes a handful of statements, not four per poll interval", async () => {
    const { sql: counting, statements } = countingSql(f.sql);
    const replica = createReplica(counting, "idle", { pollIntervalMs: 50, idlePollIntervalMs: 60_000 });
    replica.start();
    try {
      await Bun.sleep(1_500);
    } finally {
      await replica.stop();
    }
    // A fixed 50 ms poll would be ~30 passes of a claim and a look for the next due time per kind.
    expect(statements(), "statements of an idle scheduler in 1.5 s").toBeLessThan(12);
  });

  test("it still wakes at the next due time, long before its idle interval", async () => {
    const id = await reserve(f.sql, { userId: "u1", amount: 7, executeAt: inMs(1_000) });
    const replica = createReplica(f.sql, "idle-due", { pollIntervalMs: 50, idlePollIntervalMs: 60_000 });
    replica.start();
    try {
      const done = await waitUntil(
        async () => {
          const r = await reservation(id);
          return r.status === "DONE" && r;
        },
        "the reservation to run at its time",
        20_000,
      );
      expect((done.executed_at?.getTime() ?? 0) - done.execute_at.getTime()).toBeLessThan(15_000);
    } finally {
      await replica.stop();
    }
  });
});

describe("exactly once", () => {
  test("two replicas and 300 reservations due at one instant: each executed once, balances exact", async () => {
    const at = inMs(1_000);
    const users = Array.from({ length: 30 }, (_, i) => `user-${i}`);
    await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        reserve(f.sql, { userId: users[i % 30] as string, amount: i + 1, executeAt: at }),
      ),
    );
    const a = createReplica(f.sql, "replica-a", { batchSize: 25 });
    const b = createReplica(f.sql, "replica-b", { batchSize: 25 });
    a.start();
    b.start();
    try {
      await waitUntil(async () => (await statusCounts(f.sql)).DONE === 300, "all 300 reservations DONE");
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    expect(await ledgerProblems(f.sql)).toEqual([]);
    const [byReplica] = await f.sql<{ replicas: number }[]>`
      select count(distinct detail->>'transaction_id')::int as replicas from point_audit where action = 'EXECUTE'`;
    expect(byReplica?.replicas, "one EXECUTE audit row per reservation").toBe(300);
  });

  test("a reservation whose claim expired is taken over by another replica", async () => {
    const id = await reserve(f.sql, { userId: "u2", amount: 7, executeAt: inMs(-1_000) });
    // A replica claimed it and died: PROCESSING, its lease (due_at) already over.
    await claimedByDeadReplica(id, "dead-replica", 1);
    const replica = createReplica(f.sql, "alive");
    replica.start();
    try {
      await waitUntil(async () => (await reservation(id)).status === "DONE", "the take-over");
    } finally {
      await replica.stop();
    }
    const [row] = await f.sql`select attempt_count from point_reservations where reservation_id = ${id}`;
    expect(row?.attempt_count, "the dead claim counted as an attempt").toBe(2);
    expect(await balanceOf("u2")).toBe(7);
  });

  test("the same execution forced twice grants once (the ledger's unique reservation is the last defence)", async () => {
    const id = await reserve(f.sql, { userId: "u3", amount: 50, executeAt: inMs(-1) });
    const execution = (eventId: string) => ({
      reservationId: id,
      lockedBy: "w",
      transactionId: crypto.randomUUID(),
      eventId,
      now: new Date(),
      subject: POINTS_SUBJECT,
      payload: { event_id: eventId },
    });
    await f.sql`update point_reservations set status = 'PROCESSING', locked_by = 'w' where reservation_id = ${id}`;
    expect(await executeReservation(f.sql, execution(crypto.randomUUID()))).toMatchObject({ finalized: 1, granted: 1 });
    // The same message again, as the seed's worker received it twice: the guard stops it...
    expect(await executeReservation(f.sql, execution(crypto.randomUUID()))).toMatchObject({ finalized: 0, granted: 0 });
    // ...and even with the guard defeated (the row put back in flight), the ledger refuses a second grant.
    await f.sql`update point_reservations set status = 'PROCESSING', locked_by = 'w' where reservation_id = ${id}`;
    expect(await executeReservation(f.sql, execution(crypto.randomUUID()))).toMatchObject({ finalized: 1, granted: 0 });
    expect(await balanceOf("u3")).toBe(50);
    const [counts] = await f.sql`
      select (select count(*) from point_transactions)::int as txs,
             (select count(*) from outbox_events)::int as events,
             (select transaction_id from point_reservations) = (select transaction_id from point_transactions) as same`;
    expect(counts).toEqual({ txs: 1, events: 1, same: true });
  });

  test("reservations made while the scheduler is down run once it starts", async () => {
    const ids = await Promise.all(
      [-5_000, -1_000, -10].map((ms) => reserve(f.sql, { userId: "u4", amount: 10, executeAt: inMs(ms) })),
    );
    const replica = createReplica(f.sql, "late");
    replica.start();
    try {
      await waitUntil(async () => (await statusCounts(f.sql)).DONE === 3, "the missed reservations to run");
    } finally {
      await replica.stop();
    }
    for (const id of ids) expect((await reservation(id)).status).toBe("DONE");
    expect(await balanceOf("u4")).toBe(30);
  });
});

describe("failures", () => {
  test("a failing execution is retried with backoff and ends FAILED after the maximum, changing nothing", async () => {
    // A trigger makes every ledger insert for this user fail, as a broken constraint or disk would.
    await f.sql.unsafe(`
      create or replace function poison_points() returns trigger language plpgsql as $$
      begin
        if new.user_id = 'poison' then raise exception 'injected ledger failure'; end if;
        return new;
      end $$;
      drop trigger if exists poison_points on point_transactions;
      create trigger poison_points before insert on point_transactions
        for each row execute function poison_points();`);
    try {
      const bad = await reserve(f.sql, { userId: "poison", amount: 1, executeAt: inMs(-1) });
      const good = await reserve(f.sql, { userId: "fine", amount: 2, executeAt: inMs(-1) });
      const replica = createReplica(f.sql, "r1", { maxAttempts: 3 });
      replica.start();
      try {
        await waitUntil(async () => (await reservation(bad)).status === "FAILED", "the poison reservation FAILED");
      } finally {
        await replica.stop();
      }
      expect((await reservation(good)).status, "one failing reservation holds up no other").toBe("DONE");
      const [row] = await f.sql`
        select attempt_count, last_error, locked_by from point_reservations where reservation_id = ${bad}`;
      expect(row).toEqual({ attempt_count: 3, last_error: "injected ledger failure", locked_by: null });
      expect(await balanceOf("poison")).toBe(0);
      const metrics = await replica.registry.metrics();
      expect(metrics).toContain('entitlement_scheduler_items_total{kind="points",result="retry_scheduled"} 2');
      expect(metrics).toContain('entitlement_scheduler_items_total{kind="points",result="failed"} 1');
      expect(metrics).toContain('entitlement_scheduler_failed_current{kind="points"} 1');
    } finally {
      await f.sql.unsafe("drop trigger if exists poison_points on point_transactions");
    }
  });

  test("an execution that would take a balance past 2^53 - 1 ends FAILED: nothing granted, no event", async () => {
    const cap = "9007199254740991";
    // Accepted while the balance was low (the API refuses it once the balance is near the cap); the balance then grew.
    const over = await reserve(f.sql, { userId: "capped", amount: 11, executeAt: inMs(-1) });
    await f.sql`insert into point_balances (user_id, balance, updated_at) values ('capped', ${cap}::bigint - 10, now())`;
    const replica = createReplica(f.sql, "r1", { maxAttempts: 2 });
    replica.start();
    try {
      await waitUntil(async () => (await reservation(over)).status === "FAILED", "the over-cap reservation FAILED");
    } finally {
      await replica.stop();
    }
    const [balance] = await f.sql`select balance::text as balance from point_balances where user_id = 'capped'`;
    expect(balance?.balance, "the balance did not move").toBe((BigInt(cap) - 10n).toString());
    const events = await f.sql`select 1 from outbox_events where aggregate_key = 'capped'`;
    expect(events.length, "no PointsGranted event for a consumer to refuse").toBe(0);
  });

  test("a claim that was never finalized on its last attempt ends FAILED instead of running again", async () => {
    const id = await reserve(f.sql, { userId: "u5", amount: 3, executeAt: inMs(-1_000) });
    await claimedByDeadReplica(id, "dead", 3);
    const replica = createReplica(f.sql, "r1", { maxAttempts: 3 });
    const report = await replica.scheduler.runOnce();
    expect(report).toMatchObject({ claimed: 1, executed: 0 });
    const [row] = await f.sql`select status, last_error from point_reservations where reservation_id = ${id}`;
    expect(row?.status).toBe("FAILED");
    expect(String(row?.last_error)).toContain("lease expired on attempt 3");
    expect(await balanceOf("u5")).toBe(0);
  });
});
