// The outbox operator commands on real rows: each touches only the rows it names and is safe to run twice.
import { describe, expect, test } from "bun:test";
import { OUTBOX_USAGE, outboxSubcommand, printOutboxStats, requeueOutbox } from "../../src/entitlement/ops/outbox.ts";
import { useTestDatabase } from "../support/infra.ts";

const f = useTestDatabase("ops_outbox", { service: "entitlement", poolMax: 2 });

type Row = { event_id: string; status: string; attempt_count: number; next_retry_at: Date | null; last_error: string };

async function insertEvent(status: string, options: { attempts?: number; ageSeconds?: number } = {}): Promise<string> {
  const id = crypto.randomUUID();
  await f.sql`
    insert into outbox_events (event_id, event_type, aggregate_key, payload, status, attempt_count, next_retry_at,
                               created_at, last_error)
    values (${id}, 'EntitlementGranted', ${`u-${id.slice(0, 8)}:sku`}, ${f.sql.json({ event_id: id })}, ${status},
            ${options.attempts ?? 0}, ${status === "PENDING" ? new Date(Date.now() + 60_000) : null},
            now() - make_interval(secs => ${options.ageSeconds ?? 0}), ${status === "FAILED" ? "boom" : null})`;
  return id;
}

async function row(id: string): Promise<Row> {
  const [r] = await f.sql<Row[]>`select * from outbox_events where event_id = ${id}`;
  if (!r) throw new Error(`row ${id} is missing`);
  return r;
}

function capture() {
  const lines: string[] = [];
  return { lines, out: (line: string) => lines.push(line) };
}

describe("outbox requeue <event_id>", () => {
  test("FAILED becomes PENDING with attempt_count 0; other rows are untouched; a second run does nothing", async () => {
    const failed = await insertEvent("FAILED", { attempts: 10 });
    const otherFailed = await insertEvent("FAILED", { attempts: 10 });
    const before = await row(otherFailed);

    const first = capture();
    expect(await requeueOutbox({ sql: f.sql, out: first.out }, { eventId: failed })).toBe(0);
    expect(first.lines.join("\n")).toContain(`requeued ${failed}`);
    expect(first.lines.join("\n")).toContain("attempt_count 10 -> 0");
    const after = await row(failed);
    expect(after).toMatchObject({ status: "PENDING", attempt_count: 0, next_retry_at: null, last_error: "boom" });
    expect(await row(otherFailed)).toEqual(before);

    const second = capture();
    expect(await requeueOutbox({ sql: f.sql, out: second.out }, { eventId: failed })).toBe(0);
    expect(second.lines).toEqual([`event ${failed} is PENDING, not FAILED: nothing to do`]);
    expect(await row(failed)).toEqual(after);
  });

  test("an unknown event id is an error", async () => {
    const out = capture();
    const id = crypto.randomUUID();
    expect(await requeueOutbox({ sql: f.sql, out: out.out }, { eventId: id })).toBe(1);
    expect(out.lines).toEqual([`no outbox event ${id}`]);
  });
});

describe("outbox requeue --failed and stats", () => {
  test("requeues every FAILED row and nothing else, then reports nothing to do", async () => {
    await f.sql`delete from outbox_events`;
    const failed = [await insertEvent("FAILED", { attempts: 3 }), await insertEvent("FAILED", { attempts: 10 })];
    const published = await insertEvent("PUBLISHED");
    const pending = await insertEvent("PENDING", { attempts: 2, ageSeconds: 120 });
    const untouched = [await row(published), await row(pending)];

    const stats = capture();
    expect(await printOutboxStats({ sql: f.sql, out: stats.out })).toBe(0);
    expect(stats.lines[0]).toBe("outbox events: PENDING=1 IN_FLIGHT=0 PUBLISHED=1 FAILED=2");
    expect(stats.lines[1]).toMatch(new RegExp(`^oldest unpublished event: ${pending}, 1[2-9]\\d\\.\\ds old$`));
    expect(stats.lines[2]).toStartWith("failed events: 2");

    const first = capture();
    expect(await requeueOutbox({ sql: f.sql, out: first.out }, "failed")).toBe(0);
    expect(first.lines.at(-1)).toBe("requeued 2 FAILED event(s)");
    for (const id of failed) expect(await row(id)).toMatchObject({ status: "PENDING", attempt_count: 0 });
    expect([await row(published), await row(pending)]).toEqual(untouched);

    const second = capture();
    expect(await requeueOutbox({ sql: f.sql, out: second.out }, "failed")).toBe(0);
    expect(second.lines).toEqual(["no FAILED events: nothing to do"]);
  });
});

describe("the outbox command", () => {
  const env = () => ({ DATABASE_URL: f.db.url });

  test("usage errors exit 2 without touching the database", async () => {
    for (const args of [[], ["requeue"], ["requeue", "not-a-uuid"], ["stats", "extra"], ["purge"]]) {
      expect(await outboxSubcommand({ DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" }).run(args)).toBe(2);
    }
    expect(OUTBOX_USAGE).toContain("requeue --failed");
  });

  test("runs against the configured database and exits 0", async () => {
    const id = await insertEvent("FAILED", { attempts: 10 });
    expect(await outboxSubcommand(env()).run(["requeue", id])).toBe(0);
    expect((await row(id)).status).toBe("PENDING");
    expect(await outboxSubcommand(env()).run(["stats"])).toBe(0);
  });

  test("an unreachable database exits 1, invalid configuration 78", async () => {
    expect(await outboxSubcommand({ DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" }).run(["stats"])).toBe(1);
    expect(await outboxSubcommand({ DATABASE_URL: f.db.url, DATABASE_POOL_MAX: "zero" }).run(["stats"])).toBe(78);
  });
});
