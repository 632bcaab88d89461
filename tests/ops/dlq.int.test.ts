// The notification DLQ commands on real rows: requeue moves FAILED back to PENDING and deletes the DLQ row in one
// transaction, touches nothing else, and a second run does nothing.
import { describe, expect, test } from "bun:test";
import { DLQ_USAGE, dlqSubcommand, printNotificationDlq, requeueNotification } from "../../src/notification/ops/dlq.ts";
import { useTestDatabase } from "../support/infra.ts";

const f = useTestDatabase("ops_dlq", { service: "notification", poolMax: 2 });

async function insertNotification(status: string, options: { dlq?: boolean; attempts?: number } = {}) {
  const id = crypto.randomUUID();
  const eventId = crypto.randomUUID();
  await f.sql`
    insert into notifications (notification_id, event_id, user_id, type, occurred_at, payload_json, status,
                               attempt_count, last_error)
    values (${id}, ${eventId}, 'user-1', 'EntitlementGranted', now(), ${f.sql.json({ event_id: eventId })}, ${status},
            ${options.attempts ?? 0}, ${status === "FAILED" ? "simulated failure" : null})`;
  if (options.dlq) {
    await f.sql`
      insert into notification_dlq (dlq_id, notification_id, event_id, payload_json, error_message)
      values (${crypto.randomUUID()}, ${id}, ${eventId}, ${f.sql.json({ event_id: eventId })}, 'simulated failure')`;
  }
  return id;
}

const snapshot = (id: string) =>
  f.sql`select n.*, (select count(*)::int from notification_dlq d where d.notification_id = n.notification_id) as dlq
      from notifications n where notification_id = ${id}`.then((rows) => rows[0]);

function capture() {
  const lines: string[] = [];
  return { lines, out: (line: string) => lines.push(line) };
}

describe("dlq requeue", () => {
  test("FAILED → PENDING with attempt_count 0 and its DLQ row deleted; a second run does nothing", async () => {
    const target = await insertNotification("FAILED", { dlq: true, attempts: 10 });
    const other = await insertNotification("FAILED", { dlq: true, attempts: 10 });
    const otherBefore = await snapshot(other);

    const first = capture();
    expect(await requeueNotification({ sql: f.sql, out: first.out }, target)).toBe(0);
    expect(first.lines).toEqual([
      `requeued ${target}: FAILED -> PENDING, attempt_count 10 -> 0, 1 notification_dlq row(s) deleted`,
    ]);
    const after = await snapshot(target);
    expect(after).toMatchObject({ status: "PENDING", attempt_count: 0, locked_by: null, dlq: 0 });
    expect(after?.next_retry_at).toBeInstanceOf(Date);
    expect(await snapshot(other)).toEqual(otherBefore);

    const second = capture();
    expect(await requeueNotification({ sql: f.sql, out: second.out }, target)).toBe(0);
    expect(second.lines).toEqual([`notification ${target} is PENDING, not FAILED: nothing to do`]);
    expect(await snapshot(target)).toEqual(after);
  });

  test("an unknown notification is an error", async () => {
    const id = crypto.randomUUID();
    const out = capture();
    expect(await requeueNotification({ sql: f.sql, out: out.out }, id)).toBe(1);
  });
});

describe("dlq list and the dlq command", () => {
  test("lists every DLQ row with its notification's state", async () => {
    const id = await insertNotification("FAILED", { dlq: true, attempts: 3 });
    const out = capture();
    expect(await printNotificationDlq({ sql: f.sql, out: out.out }, { limit: 1000 })).toBe(0);
    const line = out.lines.find((l) => l.includes(id));
    expect(line).toContain("status=FAILED attempts=3");
    expect(line).toContain('error="simulated failure"');
    expect(out.lines.at(-1)).toMatch(/^\d+ notification\(s\) in the DLQ$/);
  });

  test("usage errors exit 2; requeue through the command exits 0", async () => {
    const env = { DATABASE_URL: f.db.url };
    for (const args of [[], ["list", "--limit"], ["list", "--limit", "0"], ["requeue"], ["requeue", "x"], ["purge"]]) {
      expect(await dlqSubcommand(env).run(args)).toBe(2);
    }
    expect(DLQ_USAGE).toContain("requeue <notification_id>");
    const id = await insertNotification("FAILED", { dlq: true });
    expect(await dlqSubcommand(env).run(["requeue", id])).toBe(0);
    expect(await snapshot(id)).toMatchObject({ status: "PENDING", dlq: 0 });
    expect(await dlqSubcommand(env).run(["list", "--limit", "5"])).toBe(0);
  });
});
