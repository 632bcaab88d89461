// GET /v1/users/{user_id}/entitlements/{stock_keeping_unit}/history: the audit log of one
// entitlement, newest first, paged with an opaque cursor.
import { describe, expect, test } from "bun:test";
import { encodeCursor } from "../../src/entitlement/features/history/paging.ts";
import { commandRequest, send, useApi, vectorBody } from "./api.helpers.ts";

const f = useApi("ent_history");

const history = (user: string, query = "") =>
  send(f.app, new Request(`http://localhost/v1/users/${user}/entitlements/sku-1/history${query}`));
const command = (action: "grants" | "revokes", key: string, user: string, trace: string) =>
  send(
    f.app,
    commandRequest(
      action,
      { ...vectorBody, user_id: user, purchase_id: `p-${key}` },
      { "idempotency-key": key, "x-trace-id": trace },
    ),
  );

describe("history", () => {
  test("every applied change, newest first, with action, status, version, reason, source id, trace and time", async () => {
    const at = new Date(Date.now() - 60_000);
    f.clock.at = at;
    await command("grants", "h-1", "hist-1", "t-1");
    // A request's clock is read before its row lock: a later change may carry an earlier time. The version orders.
    f.clock.at = new Date(at.getTime() - 5_000);
    await command("revokes", "h-2", "hist-1", "t-2");
    f.clock.at = at;
    await command("grants", "h-3", "hist-1", "t-3");
    expect((await command("grants", "h-4", "hist-1", "t-4")).status, "a refused grant is no change").toBe(409);
    f.clock.at = undefined;

    const reply = await history("hist-1");
    expect(reply.status).toBe(200);
    expect(reply.json.next_cursor).toBeNull();
    expect(reply.json.user_id).toBe("hist-1");
    expect(reply.json.stock_keeping_unit).toBe("sku-1");
    const changes = reply.json.changes as Record<string, unknown>[];
    expect(changes.map((c) => [c.action, c.status, c.version, c.source_id, c.trace_id])).toEqual([
      ["GRANT", "ACTIVE", 2, "p-h-3", "t-3"],
      ["REVOKE", "REVOKED", 1, "p-h-2", "t-2"],
      ["GRANT", "ACTIVE", 0, "p-h-1", "t-1"],
    ]);
    expect(changes[0]).toEqual({
      action: "GRANT",
      status: "ACTIVE",
      version: 2,
      reason: "purchase",
      source_id: "p-h-3",
      caller: null,
      trace_id: "t-3",
      occurred_at: at.toISOString(),
    });
  });

  test("pages: limit rows a page, next_cursor until the last page, no change twice or missing", async () => {
    for (let i = 0; i < 7; i++) await command(i % 2 === 0 ? "grants" : "revokes", `hp-${i}`, "hist-2", `t-${i}`);
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const reply = await history("hist-2", `?limit=3${cursor ? `&cursor=${cursor}` : ""}`);
      expect(reply.status).toBe(200);
      const changes = reply.json.changes as { version: number }[];
      expect(changes.length).toBeLessThanOrEqual(3);
      seen.push(...changes.map((c) => c.version));
      cursor = reply.json.next_cursor as string | null;
      pages++;
    } while (cursor !== null);
    expect(pages).toBe(3);
    expect(seen, "every change once, newest first").toEqual([6, 5, 4, 3, 2, 1, 0]);
  });

  test("rows recorded before versions were come last, by time", async () => {
    await command("grants", "hl-1", "hist-3", "t-new");
    await f.sql`
      insert into entitlement_audit (audit_id, occurred_at, user_id, stock_keeping_unit, action, source, source_id)
      values (${crypto.randomUUID()}, now() + interval '1 hour', 'hist-3', 'sku-1', 'REVOKE', 'legacy', 'old-2'),
             (${crypto.randomUUID()}, now() + interval '2 hours', 'hist-3', 'sku-1', 'GRANT', 'legacy', 'old-3')`;
    const reply = await history("hist-3", "?limit=2");
    const first = reply.json.changes as { version: number | null; source_id: string }[];
    const next = await history("hist-3", `?limit=2&cursor=${reply.json.next_cursor}`);
    const second = next.json.changes as { version: number | null; source_id: string }[];
    expect([...first, ...second].map((c) => [c.version, c.source_id])).toEqual([
      [0, "p-hl-1"],
      [null, "old-3"],
      [null, "old-2"],
    ]);
    expect(next.json.next_cursor).toBeNull();
  });

  test("a pair without changes → 200 with no changes", async () => {
    const reply = await history("nobody");
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ user_id: "nobody", stock_keeping_unit: "sku-1", changes: [], next_cursor: null });
  });

  test("bad paging → 400 BAD_REQUEST with the reason", async () => {
    const cases: [string, string][] = [
      ["?limit=0", "limit must be an integer from 1 to 1000"],
      ["?limit=1001", "limit must be an integer from 1 to 1000"],
      ["?limit=ten", "limit must be an integer from 1 to 1000"],
      ["?limit=1.5", "limit must be an integer from 1 to 1000"],
      ["?cursor=%2F%2F", "cursor is invalid"],
      [`?cursor=${encodeCursor("not-a-uuid")}`, "cursor is invalid"],
    ];
    for (const [query, message] of cases) {
      const reply = await history("hist-1", query);
      expect(reply.status, query).toBe(400);
      expect(reply.json).toEqual({ code: "BAD_REQUEST", message });
    }
  });

  test("the page query walks the history index of every month: merged in order on the first page", async () => {
    // An item with 30 changes in each month partition among 3,000 changes of other items, analyzed, as a
    // deployment has it.
    await f.sql`
      insert into entitlement_audit (audit_id, occurred_at, user_id, stock_keeping_unit, action, version)
      select gen_random_uuid(), coalesce(p.from_at, '2000-01-01') + i * interval '1 minute',
             case when i % 100 = 0 then 'x' else 'other-' || (i % 97) end, 'y', 'GRANT', i
      from history_partitions() p, generate_series(1, 3000) as i
      where p.parent = 'entitlement_audit' and not p.is_default`;
    await f.sql`analyze entitlement_audit`;
    const explain = async (cursor: string) => {
      const plan = await f.sql.unsafe(`explain select 1 from entitlement_audit a
        where a.user_id = 'x' and a.stock_keeping_unit = 'y' ${cursor}
        order by coalesce(a.version, -1) desc, a.occurred_at desc, a.audit_id desc limit 10`);
      return plan.map((row) => Object.values(row).join("")).join("\n");
    };
    const months = await f.sql<{ partition: string }[]>`
      select partition from history_partitions() where parent = 'entitlement_audit' and not is_default`;
    const first = await explain("");
    const next = await explain(
      "and (coalesce(a.version, -1), a.occurred_at, a.audit_id) < (-1, now(), gen_random_uuid())",
    );
    for (const text of [first, next]) {
      expect(text, "the old rows through the history index").toContain("entitlement_audit_history_idx");
      for (const { partition } of months) {
        expect(text, `${partition} through its copy of the history index`).toMatch(
          new RegExp(`Index Scan using \\S+ on ${partition} `),
        );
      }
    }
    expect(first, "the first page merges the months in index order: no sort").toContain("Merge Append");
    expect(first, "(a Sort node, not the Merge Append's sort key)").not.toMatch(/Sort {2}\(cost/);
    await f.sql`delete from entitlement_audit where user_id = 'x' or user_id like 'other-%'`;
  });
});
