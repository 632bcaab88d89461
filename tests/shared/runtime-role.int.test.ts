// Least privilege in PostgreSQL: Entitlement serves with DATABASE_URL a runtime role that has only the GRANTs
// docs/security.md lists (DML on its own schema), while DATABASE_MIGRATION_URL (the owner) runs the migrations at
// serve. The runtime role serves a grant, and can neither run DDL nor read Notification's schema.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { createTestDatabase, type TestDatabase, uniqueName } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";

setDefaultTimeout(90_000);

const ENTITLEMENT = new URL("../../src/entitlement/main.ts", import.meta.url).pathname;
const role = uniqueName("rt_entitlement").slice(0, 63);
let db: TestDatabase;
let owner: postgres.Sql;
let runtimeUrl: string;
let child: Bun.Subprocess<"ignore", "pipe", "inherit"> | undefined;

/** The runtime role's GRANTs, exactly as docs/security.md gives them (schema `entitlement`). */
const grants = (database: string) => [
  `create role "${role}" login`,
  `grant connect on database "${database}" to "${role}"`,
  `grant usage on schema entitlement to "${role}"`,
  `grant select, insert, update, delete on all tables in schema entitlement to "${role}"`,
  `grant usage, select on all sequences in schema entitlement to "${role}"`,
];

beforeAll(async () => {
  db = await createTestDatabase("runtime_role");
  owner = postgres(db.url, { max: 1, onnotice: () => {} });
  for (const statement of grants(db.name)) await owner.unsafe(statement);
  const url = new URL(db.url);
  url.username = role;
  url.password = "";
  runtimeUrl = url.toString();
});

afterAll(async () => {
  child?.kill("SIGKILL");
  await owner.end();
  await db.drop();
  // Roles belong to the cluster: drop it once its only database (and with it every grant) is gone.
  const admin = postgres(new URL("/postgres", db.url).toString(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop role if exists "${role}"`);
  await admin.end();
});

async function listeningPort(out: ReadableStream<Uint8Array>): Promise<number> {
  let text = "";
  for await (const chunk of out) {
    text += new TextDecoder().decode(chunk);
    const match = /"port":(\d+),"msg":"entitlement listening"/.exec(text);
    if (match) {
      void out.pipeTo(new WritableStream()).catch(() => {});
      return Number(match[1]);
    }
  }
  throw new Error(`entitlement exited before listening:\n${text}`);
}

test("serve migrates with DATABASE_MIGRATION_URL and serves a grant with a DML-only runtime role", async () => {
  child = Bun.spawn(["bun", ENTITLEMENT, "serve"], {
    env: {
      PATH: process.env.PATH ?? "",
      DATABASE_URL: runtimeUrl,
      DATABASE_MIGRATION_URL: db.url,
      HOST: "127.0.0.1",
      PORT: "0",
      NATS_ENABLED: "false",
      ENTITLEMENT_AUTH_DISABLED: "true",
    },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
  });
  const base = `http://127.0.0.1:${await listeningPort(child.stdout)}`;
  await waitUntil(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, "readyz");
  const grant = await fetch(`${base}/v1/entitlements/grants`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": "rt-1" },
    body: JSON.stringify({ user_id: "rt-user", stock_keeping_unit: "sku", reason: "purchase", purchase_id: "p-1" }),
  });
  expect(grant.status, "the runtime role's DML is enough to serve a grant").toBe(200);
  const [row] = await owner`
    select status, (
      select string_agg(distinct usename, ',') from pg_stat_activity
      where application_name = 'entitlement' and datname = current_database()
    ) as served_by
    from entitlement.entitlements where user_id = 'rt-user'`;
  expect(row).toEqual({ status: "ACTIVE", served_by: role });
  child.kill("SIGTERM");
  expect(await child.exited).toBe(0);
});

test("the runtime role can run no DDL and cannot read the other service's schema", async () => {
  const runtime = postgres(runtimeUrl, { max: 1, onnotice: () => {} });
  const sqlstate = (query: Promise<unknown>) =>
    query.then(
      () => "succeeded",
      (e: { code?: string }) => e.code,
    );
  try {
    expect(await sqlstate(runtime.unsafe("create table entitlement.intruder (x int)")), "no CREATE").toBe("42501");
    expect(await sqlstate(runtime.unsafe("drop table entitlement.entitlements")), "no DROP").toBe("42501");
    expect(await sqlstate(runtime.unsafe("alter table entitlement.entitlements add column x int"))).toBe("42501");
    expect(await sqlstate(runtime.unsafe("truncate entitlement.entitlements")), "no TRUNCATE").toBe("42501");
    expect(await sqlstate(runtime.unsafe("select 1 from notification.notifications")), "no reading").toBe("42501");
    expect(await sqlstate(runtime.unsafe("select 1 from entitlement.entitlements limit 1")), "own schema").toBe(
      "succeeded",
    );
  } finally {
    await runtime.end();
  }
});
