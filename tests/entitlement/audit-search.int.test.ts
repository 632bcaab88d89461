// The console's audit search by a caller's prefix: `console:*` (or `console:`) finds every console operator's changes
// and nothing else, read through the caller index as a range; and the times it shows are milliseconds, as everywhere
// else in the API and the console.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createApp } from "../../src/entitlement/app.ts";
import { parseTokenEntries, tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { type ConsoleClient, consoleClient, signIn } from "../support/console-client.ts";
import { type ApiFixture, openApi } from "./api.helpers.ts";

setDefaultTimeout(60_000);

const READER = "ent_audit-search-reader-token";
let f: ApiFixture;
let client: ConsoleClient;

const CALLERS = ["console:lead", "console:support", "console_lead", "consolex", "cli:bulk", "api", "console"];

beforeAll(async () => {
  f = await openApi("ent_audit_search");
  const app = createApp({
    sql: f.sql,
    log: silentLogger,
    now: () => new Date(),
    idempotencyTtlHours: 24,
    auth: {
      disabled: false,
      metricsPublic: false,
      tokens: parseTokenEntries(tokenEntryLine("viewer", READER, "read")).entries,
    },
    console: { enabled: true, idleMs: 600_000, alwaysSecure: false, undoWindowMs: 3_600_000 },
  });
  client = consoleClient((r) => app.handle(r));
  expect((await signIn(client, READER)).status, "signed in").toBe(303);
  await f.sql`
    insert into entitlement_audit (audit_id, occurred_at, user_id, stock_keeping_unit, action, version, caller)
    select gen_random_uuid(), now() - make_interval(secs => i) - interval '123456 microseconds', 'audit-u', c, 'GRANT',
           0, c
    from unnest(${CALLERS}::text[]) with ordinality as t(c, i)`;
  // Many changes of API callers, so that the planner has a reason to prefer the caller index for a console search.
  await f.sql`
    insert into entitlement_audit (audit_id, occurred_at, user_id, stock_keeping_unit, action, version, caller)
    select gen_random_uuid(), now() - make_interval(secs => i), 'bulk-u' || i, 'sku', 'GRANT', 0, 'payments'
    from generate_series(1, 20000) i`;
  await f.sql`analyze entitlement_audit`;
});
afterAll(() => f.close());

async function search(query: string): Promise<{ callers: string[]; times: string[] }> {
  const page = await client.get(`/console/audit?${query}`);
  expect(page.status, page.text).toBe(200);
  // The rows of audit-u carry their caller as their SKU too.
  const rows = [
    ...page.text.matchAll(
      /data-testid="audit-row"><td><time>([^<]+)<\/time><\/td>\s*<td><a [^>]*><bdi>[^<]*<\/bdi><\/a><\/td>\s*<td><bdi>([^<]*)<\/bdi>/g,
    ),
  ];
  return { callers: rows.map((m) => m[2] as string), times: rows.map((m) => m[1] as string) };
}

test("console:* and console: find every console operator's changes, and only theirs", async () => {
  for (const caller of ["console:*", "console:"]) {
    const found = await search(`user_id=audit-u&caller=${encodeURIComponent(caller)}`);
    expect(found.callers.sort(), `caller=${caller}`).toEqual(["console:lead", "console:support"]);
  }
  expect((await search("user_id=audit-u&caller=cli:*")).callers).toEqual(["cli:bulk"]);
  expect((await search("user_id=audit-u&caller=console_*")).callers, "_ is no wildcard").toEqual(["console_lead"]);
  expect((await search("user_id=audit-u&caller=console:lead")).callers, "a whole caller: exact").toEqual([
    "console:lead",
  ]);
  expect((await search("user_id=audit-u&caller=console")).callers, "no * and no colon: exact").toEqual(["console"]);
  for (const bad of ["*", "con*sole*"]) {
    expect((await client.get(`/console/audit?caller=${encodeURIComponent(bad)}`)).status, bad).toBe(400);
  }
});

async function plan(where: string): Promise<string> {
  const rows = await f.sql.begin(async (tx) => {
    await tx`set local enable_seqscan = off`;
    return tx.unsafe<{ "QUERY PLAN": string }[]>(
      `explain select audit_id from entitlement_audit where ${where} order by occurred_at desc, audit_id desc limit 51`,
    );
  });
  return rows.map((r) => r["QUERY PLAN"]).join("\n");
}

test("a prefix search reads the caller index as a range; a whole caller still reads it by equality", async () => {
  const prefix = await plan(`caller ~>=~ 'console:' and caller ~<~ 'console:${"\u{10FFFF}"}'`);
  expect(prefix, prefix).toMatch(/Index Cond: \(\(caller ~>=~ 'console:'::text\)/);
  const exact = await plan("caller = 'console:lead'");
  expect(exact, exact).toMatch(/Index (Only )?Scan Backward using \S*caller\S* /);
  expect(exact, exact).toMatch(/Index Cond: \(caller = 'console:lead'::text\)/);
});

test("times are shown to the millisecond, as in the API", async () => {
  const { times } = await search("user_id=audit-u");
  expect(times.length).toBe(CALLERS.length);
  for (const time of times)
    expect(time, "ISO-8601 UTC with milliseconds").toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});
