// The database fixture every integration test builds on (tests/support/infra.ts): a clone of the migrated template,
// and resetService, which empties one service's tables by the schema's own list, not by a list a test keeps.
import { expect, test } from "bun:test";
import { insertEvent } from "../entitlement/outbox.helpers.ts";
import { resetService, useTestDatabase } from "../support/infra.ts";

const f = useTestDatabase("test_db", { service: "entitlement" });

const count = async (table: string) =>
  (await f.sql<{ n: number }[]>`select count(*)::int as n from ${f.sql(table)}`)[0]?.n ?? -1;

test("a fresh clone holds rows only in the tables its comment names as filled by the migrations", async () => {
  const [comment] = await f.sql<{ text: string }[]>`
    select shobj_description(oid, 'pg_database') as text from pg_database where datname = current_database()`;
  const seeded = JSON.parse(comment?.text ?? "{}") as Record<string, string[]>;
  const named = Object.fromEntries(Object.entries(seeded).map(([schema, names]) => [schema, names.toSorted()]));
  const tables = await f.sql<{ schema: string; name: string }[]>`
    select schemaname as schema, tablename as name from pg_tables
    where schemaname in ('entitlement', 'notification') order by 1, 2`;
  const filled: Record<string, string[]> = { entitlement: [], notification: [] };
  for (const t of tables) if ((await count(`${t.schema}.${t.name}`)) > 0) filled[t.schema]?.push(t.name);
  expect(filled, "what resetService keeps is what the template holds").toEqual(named);
  expect(named.entitlement, "the template ran every migration").toContain("schema_migrations");
});

test("resetService empties every table of its service, one no test names included, and keeps the migration ledger", async () => {
  const ledgerBefore = await count("entitlement.schema_migrations");
  await f.sql`create table entitlement.added_later (id int primary key)`;
  await f.sql`insert into entitlement.added_later values (1)`;
  await insertEvent(f.sql);
  await f.sql`insert into notification.processed_events (event_id) values (${crypto.randomUUID()})`;

  await resetService(f.sql, "entitlement");

  expect(await count("entitlement.added_later"), "a table added after the fixture was written is reset too").toBe(0);
  expect(await count("entitlement.outbox_events")).toBe(0);
  expect(await count("entitlement.schema_migrations"), "the migration ledger stays").toBe(ledgerBefore);
  expect(await count("notification.processed_events"), "the other service's tables are left alone").toBe(1);
  await resetService(f.sql, "notification");
  expect(await count("notification.processed_events")).toBe(0);
});
