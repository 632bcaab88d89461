// The per-user seq on a populated database of the schema before it: the preparation numbers the stored rows outside the
// migration's transaction (twice: a second run changes nothing), the release before goes on storing rows meanwhile,
// and the migration numbers those after the others; every row is kept and numbered 1..n per user in the order it was
// stored, the counters continue from there, and rows stored afterwards (by either release's insert) are numbered with
// no gap, even after retention deleted the newest ones.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { storeProcessedEvents } from "../../../src/notification/intake/consumer/queries.ts";
import { migrations, schemaText } from "../../../src/notification/migrations.ts";
import { createSql, type Sql } from "../../../src/shared/db.ts";
import { migrate } from "../../../src/shared/migrate.ts";
import { postgresAdminUrl, uniqueName } from "../../support/infra.ts";

setDefaultTimeout(60_000);

const SEQ = migrations.findIndex((m) => m.name === "008_player_inbox.sql");
const database = uniqueName("test_seq_migration");
let admin: postgres.Sql;
let sql: Sql;

type Fingerprint = { n: number; digest: string };
/** Every column the previous release knows, of every row. */
async function fingerprint(): Promise<Fingerprint> {
  const [row] = await sql<Fingerprint[]>`
    select count(*)::int as n,
           md5(string_agg(concat_ws('|', notification_id, event_id, user_id, type, occurred_at, payload_json, status,
                                    attempt_count, created_at), ',' order by notification_id)) as digest
    from notifications`;
  return row ?? { n: 0, digest: "" };
}

/** `count` rows for the three users, stored now, as the release before this one inserts them (it knows no seq). */
async function insertAsPreviousRelease(count: number): Promise<void> {
  await sql`
    insert into notifications (notification_id, event_id, user_id, type, occurred_at, payload_json, status,
                               attempt_count, next_retry_at, created_at)
    select gen_random_uuid(), gen_random_uuid(), 'user-' || (i % 3), 'EntitlementGranted', now(),
           jsonb_build_object('late', i), 'PENDING', 0, now(), now() + (i * interval '1 millisecond')
    from generate_series(1, ${count}) as i`;
}

beforeAll(async () => {
  const base = new URL(await postgresAdminUrl());
  admin = postgres(base.toString(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${database}"`);
  base.pathname = `/${database}`;
  sql = createSql({ url: base.toString(), schema: "notification", max: 2, applicationName: "test-seq-migration" });
  await migrate(sql, "notification", { migrations: migrations.slice(0, SEQ), functions: [] });
  // Three users, 300 rows stored over a month in an order unrelated to their ids.
  await sql`
    insert into notifications (notification_id, event_id, user_id, type, occurred_at, payload_json, status,
                               attempt_count, next_retry_at, created_at)
    select gen_random_uuid(), gen_random_uuid(), 'user-' || (i % 3), 'EntitlementGranted', now(),
           jsonb_build_object('i', i), case when i % 2 = 0 then 'SENT' else 'PENDING' end, 0, now(),
           now() - ((300 - i) * interval '2 hours')
    from generate_series(1, 300) as i`;
});
afterAll(async () => {
  await sql?.end();
  await admin?.unsafe(`drop database if exists "${database}" with (force)`);
  await admin?.end();
});

describe("the seq migration", () => {
  test("keeps every row and numbers each user's rows 1..n in the order they were stored", async () => {
    const conn = await sql.reserve();
    try {
      for (let run = 0; run < 2; run++) for (const part of migrations[SEQ]?.prepare ?? []) await conn.unsafe(part);
    } finally {
      conn.release();
    }
    const [prepared] = await sql<{ numbered: number; unnumbered: number }[]>`
      select count(seq)::int as numbered, (count(*) - count(seq))::int as unnumbered from notifications`;
    expect(prepared, "the preparation numbered every stored row").toEqual({ numbered: 300, unnumbered: 0 });
    // The release before this one stores more while the preparation is done and the migration not yet applied.
    await insertAsPreviousRelease(30);
    const before = await fingerprint();
    await migrate(sql, "notification", schemaText);
    expect(await fingerprint(), "every row and every column is kept").toEqual(before);
    const rows = await sql<{ user_id: string; seqs: string[]; by_time: string[] }[]>`
      select user_id, array_agg(seq::text order by seq) as seqs, array_agg(seq::text order by created_at) as by_time
      from notifications group by user_id order by user_id`;
    expect(rows.map((r) => r.user_id)).toEqual(["user-0", "user-1", "user-2"]);
    for (const r of rows) {
      expect(r.seqs, "1..n without a gap").toEqual(Array.from({ length: 110 }, (_, i) => String(i + 1)));
      expect(r.by_time, "seq follows the order of storage").toEqual(r.seqs);
    }
  });

  test("continues each user's numbering, for the service's insert and a plain one alike", async () => {
    await storeProcessedEvents(sql, {
      now: new Date(),
      events: [
        {
          eventId: crypto.randomUUID(),
          notifications: [
            { userId: "user-1", type: "MatchFound", occurredAt: new Date().toISOString(), payload: {} },
            { userId: "user-9", type: "MatchFound", occurredAt: new Date().toISOString(), payload: {} },
          ],
        },
      ],
    });
    // What the previous release's insert looks like: it knows nothing of seq.
    await sql`
      insert into notifications (notification_id, event_id, user_id, type, occurred_at, payload_json, status,
                                 attempt_count, next_retry_at, created_at)
      values (gen_random_uuid(), gen_random_uuid(), 'user-1', 'EntitlementGranted', now(), '{}', 'PENDING', 0, now(),
              now())`;
    const seqs = await sql<{ user_id: string; seq: string }[]>`
      select user_id, seq::text from notifications where seq > 110 or user_id = 'user-9' order by user_id, seq`;
    expect([...seqs]).toEqual([
      { user_id: "user-1", seq: "111" },
      { user_id: "user-1", seq: "112" },
      { user_id: "user-9", seq: "1" },
    ]);
  });

  test("never reuses a number, even once the rows that carried it are deleted", async () => {
    await sql`delete from notifications where user_id = 'user-2' and seq > 100`;
    await sql`
      insert into notifications (notification_id, event_id, user_id, type, occurred_at, payload_json, status,
                                 attempt_count, next_retry_at, created_at)
      values (gen_random_uuid(), gen_random_uuid(), 'user-2', 'EntitlementGranted', now(), '{}', 'PENDING', 0, now(),
              now())`;
    const [row] = await sql<
      { seq: string }[]
    >`select max(seq)::text as seq from notifications where user_id = 'user-2'`;
    expect(row?.seq, "the next number after 110, although 101..110 are gone").toBe("111");
  });
});
