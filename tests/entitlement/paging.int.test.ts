// The entitlement list is paged (docs/api.md, docs/decisions.md): `limit` 1–1000 (default 100), an opaque `cursor`, and
// `next_cursor` null on the last page. Walking the pages lists every entitlement exactly once, newest first, ties
// broken by SKU, and a page is a keyset range of one index (no sort, whatever the user's total).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { encodeCursor } from "../../src/shared/http/paging.ts";
import { type ApiFixture, openApi, send } from "./api.helpers.ts";

setDefaultTimeout(30_000);

let f: ApiFixture;
const USER = "u-paging";
const TOTAL = 250;
beforeAll(async () => {
  f = await openApi("ent_paging");
  // Groups of five rows share one updated_at (to the microsecond), so pages end inside runs of ties.
  await f.sql`
    insert into entitlements (user_id, stock_keeping_unit, status, granted_at, source, source_id, version, updated_at)
    select ${USER}, 'sku-' || lpad(i::text, 4, '0'), 'ACTIVE', now(), 'purchase', 'p', 0,
           timestamptz '2026-01-01T00:00:00Z' + (i / 5) * interval '1.000001 second'
    from generate_series(1, ${TOTAL}) as i`;
});
afterAll(() => f.close());

type Page = {
  user_id: string;
  entitlements: { stock_keeping_unit: string; updated_at: string }[];
  next_cursor: string | null;
};

const list = async (query: string) =>
  send(f.app, new Request(`http://localhost/v1/users/${USER}/entitlements${query}`));

describe("paging", () => {
  test("default page is 100, newest first, with a next_cursor", async () => {
    const reply = await list("");
    expect(reply.status).toBe(200);
    const page = reply.json as unknown as Page;
    expect(page.entitlements).toHaveLength(100);
    expect(page.next_cursor).toBeString();
    expect(page.entitlements[0]?.stock_keeping_unit, "the newest group, SKUs ascending").toBe("sku-0250");
  });

  test.each([7, 100, 249, 250, 1000])("walking pages of %i lists every entitlement once, in order", async (limit) => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const reply = await list(`?limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`);
      expect(reply.status, reply.text).toBe(200);
      const page = reply.json as unknown as Page;
      expect(page.entitlements.length).toBeLessThanOrEqual(limit);
      seen.push(...page.entitlements.map((e) => e.stock_keeping_unit));
      cursor = page.next_cursor;
      pages++;
    } while (cursor && pages < 100);
    const expected = Array.from({ length: TOTAL }, (_, i) => i + 1)
      .sort((a, b) => Math.floor(b / 5) - Math.floor(a / 5) || a - b)
      .map((i) => `sku-${String(i).padStart(4, "0")}`);
    expect(seen, "every row once: newest first, the SKU breaking ties").toEqual(expected);
    expect(pages).toBe(Math.ceil(TOTAL / limit));
  });

  test("an unknown user is an empty last page", async () => {
    const reply = await send(f.app, new Request("http://localhost/v1/users/nobody-paged/entitlements?limit=5"));
    expect(reply.json).toEqual({ user_id: "nobody-paged", entitlements: [], next_cursor: null });
  });

  test.each(["0", "1001", "-1", "1.5", "abc", "", "10000", " 5"])("limit=%p is 400", async (limit) => {
    const reply = await list(`?limit=${encodeURIComponent(limit)}`);
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({ code: "BAD_REQUEST", message: "limit must be an integer from 1 to 1000" });
  });

  test.each([
    "garbage!",
    "e30",
    encodeCursor(["2026-01-01T00:00:00.000000Z"]),
    encodeCursor(["yesterday", "sku-1"]),
    encodeCursor(["2026-01-01T00:00:00.000000Z", "a\nb"]),
    encodeCursor(["2026-13-01T00:00:00.000000Z", "sku-1"]),
    encodeCursor(["0000-01-01T00:00:00.000000Z", "sku-1"]),
    encodeCursor(["2026-02-30T00:00:00.000000Z", "sku-1"]),
    "x".repeat(2000),
  ])("a cursor this service did not make is 400 (%#)", async (cursor) => {
    const reply = await list(`?cursor=${encodeURIComponent(cursor)}`);
    expect(reply.status, reply.text).toBe(400);
    expect(reply.json).toEqual({ code: "BAD_REQUEST", message: "cursor is invalid" });
  });

  test("a page is an index range: no sort, whatever the user's total", async () => {
    const plan = await f.sql.begin(async (tx) => {
      await tx`set local enable_seqscan = off`;
      const rows = await tx.unsafe(
        `explain (format json)
         select stock_keeping_unit from entitlements
         where user_id = $1 and updated_at <= $2::timestamptz
           and (updated_at < $2::timestamptz or stock_keeping_unit > $3)
         order by updated_at desc, stock_keeping_unit limit 101`,
        [USER, "2026-01-01T00:00:30.000030Z", "sku-0100"],
      );
      return JSON.stringify(rows);
    });
    expect(plan).toContain("entitlements_user_updated_sku_idx");
    expect(plan, "the index gives the order").not.toContain('"Sort"');
  });
});
