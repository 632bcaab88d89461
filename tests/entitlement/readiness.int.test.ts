// When PostgreSQL has no connection to give (SQLSTATE 53300), requests are 503 NOT_READY and /readyz says so, and a
// flood of /readyz costs at most one database probe a second. The connection limit is made for this test alone: a
// role with CONNECTION LIMIT 1 on the test's own database (superusers ignore limits, so the role is not one).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { createSql } from "../../src/shared/db.ts";
import { postgresAdminUrl, uniqueName, useTestDatabase } from "../support/infra.ts";
import { startSilentPostgres } from "../support/silent-server.ts";
import { appOn, commandRequest, send, vectorBody } from "./api.helpers.ts";

setDefaultTimeout(30_000);

// The clone is dropped (the fixture's hook, registered first) before the role its tables were granted to.
const f = useTestDatabase("ent_ready", { service: "entitlement", poolMax: 1 });
const role = uniqueName("ent_limited");

beforeAll(async () => {
  await f.sql.unsafe(`create role ${role} login connection limit 1`);
  await f.sql.unsafe(`grant usage on schema entitlement to ${role}`);
  await f.sql.unsafe(`grant select, insert, update, delete on all tables in schema entitlement to ${role}`);
});
afterAll(async () => {
  const server = postgres(await postgresAdminUrl(), { max: 1, onnotice: () => {} });
  await server.unsafe(`drop role if exists ${role}`);
  await server.end();
});

describe("PostgreSQL out of connections", () => {
  test("a request that cannot get a connection is 503 NOT_READY, and /readyz turns 503", async () => {
    const url = new URL(f.db.url);
    url.username = role;
    url.password = "";
    const sql = createSql({ url: url.toString(), schema: "entitlement", max: 4, applicationName: "test-limited" });
    const app = appOn(sql);
    expect((await send(app, new Request("http://localhost/readyz"))).status, "ready before").toBe(200);
    // The role's one connection is taken: the pool's next one is refused with 53300.
    const holder = await sql.reserve();
    try {
      const reply = await send(app, commandRequest("grants", vectorBody, { "idempotency-key": "full-1" }));
      expect(reply.status, `no connection to be had is not the server's bug: ${reply.text}`).toBe(503);
      expect(reply.json).toEqual({ code: "NOT_READY", message: "database unavailable, retry later" });
      const list = await send(app, new Request("http://localhost/v1/users/u/entitlements"));
      expect(list.status).toBe(503);
      const ready = await send(app, new Request("http://localhost/readyz"));
      expect(ready.status, "readiness reflects what the requests meet").toBe(503);
      expect(ready.json.code).toBe("NOT_READY");
    } finally {
      holder.release();
      await sql.end({ timeout: 1 });
    }
  });

  test("a flood of /readyz costs at most one database round trip a second", async () => {
    const sql = createSql({ url: f.db.url, schema: "entitlement", max: 2, applicationName: "test-readyz" });
    let probes = 0;
    const counted = new Proxy(sql, {
      apply: (target, self, args) => {
        probes++;
        return Reflect.apply(target, self, args);
      },
    });
    const app = appOn(counted);
    try {
      const started = performance.now();
      const replies = await Promise.all(
        Array.from({ length: 200 }, () => app.handle(new Request("http://localhost/readyz"))),
      );
      const seconds = (performance.now() - started) / 1000;
      expect(replies.every((r) => r.status === 200)).toBe(true);
      expect(probes, `200 calls in ${seconds.toFixed(2)}s`).toBeLessThanOrEqual(Math.ceil(seconds) + 1);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});

test("a database that accepts the connection but never answers: /readyz is 503 within readinessTimeoutMs", async () => {
  const silent = startSilentPostgres();
  const sql = createSql({ url: silent.url, schema: "entitlement", max: 2, applicationName: "test-silent" });
  const app = appOn(sql, { readinessTimeoutMs: 300 });
  try {
    const started = performance.now();
    const ready = await send(app, new Request("http://localhost/readyz"));
    const waited = performance.now() - started;
    expect(ready.status).toBe(503);
    expect(ready.json.code).toBe("NOT_READY");
    expect(waited, "bounded by the readiness timeout, far below the pool's 10s connect timeout").toBeLessThan(3_000);
  } finally {
    await sql.end({ timeout: 0 });
    silent.stop();
  }
});
