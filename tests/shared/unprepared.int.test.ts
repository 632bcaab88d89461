// unprepared (src/shared/db.ts): a tagged-template query sent as an unnamed statement, planned at each run with its
// values, so no generic plan made on an empty table outlives the table's growth.
import { expect, test } from "bun:test";
import postgres from "postgres";
import { unprepared } from "../../src/shared/db.ts";
import { postgresAdminUrl } from "../support/infra.ts";

test("values of every kind reach their placeholders in order, and no statement stays prepared", async () => {
  const sql = postgres(await postgresAdminUrl(), { max: 1, onnotice: () => {} });
  try {
    const ids = [crypto.randomUUID(), crypto.randomUUID()];
    const at = new Date("2026-11-27T10:00:00.000Z");
    const rows = await unprepared<{ n: number; t: string; at: Date; ids: string[]; none: null }[]>(sql)`
      select ${41}::int + 1 as n, ${"text"} as t, ${at}::timestamptz as at, ${ids}::uuid[] as ids, ${null}::int as none`;
    expect([...rows]).toEqual([{ n: 42, t: "text", at, ids, none: null }]);
    const count = async () =>
      (await sql<{ n: number }[]>`select count(*)::int as n from pg_prepared_statements`)[0]?.n ?? 0;
    const before = await count();
    for (let i = 0; i < 7; i++) await unprepared<{ x: number }[]>(sql)`select ${i}::int as x`;
    expect(await count(), "the count query is the only one prepared").toBe(before);
  } finally {
    await sql.end({ timeout: 5 });
  }
});
