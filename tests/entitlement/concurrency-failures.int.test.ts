// Concurrent commands and database failures: one key means one effect; one (user, sku) admits one grant; a failure
// commits nothing and answers with the envelope, 500 or 503, within a bounded time.
import { describe, expect, test } from "bun:test";
import { idempotencyLockKey } from "../../src/entitlement/features/commands/lock-key.ts";
import { createRegistry } from "../../src/shared/metrics.ts";
import { unreachableDatabase } from "../support/infra.ts";
import { appOn, commandCount, commandRequest, countRows, send, useApi, vectorBody } from "./api.helpers.ts";

const f = useApi("ent_conc", { resetEach: true });

const grant = (key: string, body: object = vectorBody) =>
  send(f.app, commandRequest("grants", body as Record<string, unknown>, { "idempotency-key": key }));

describe("concurrency", () => {
  test("20 concurrent requests with one key: one effect and 20 byte-identical replies (test 32)", async () => {
    const replies = await Promise.all(Array.from({ length: 20 }, () => grant("same-key")));
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(new Set(replies.map((r) => r.text)).size, "every reply is byte-identical").toBe(1);
    expect(await countRows(f.sql), "exactly one row in each table").toEqual({
      entitlements: 1,
      audit: 1,
      outbox: 1,
      idempotency: 1,
    });
    expect(await commandCount(f.registry, "GRANT", "idempotency_reused"), "the other 19 are replays").toBe(19);
  });

  test("20 concurrent grants of one (user, sku) with different keys: one 200 and 19 × 409 already ACTIVE", async () => {
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => grant(`key-${i}`)));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    const conflicts = replies.filter((r) => r.status === 409);
    expect(conflicts).toHaveLength(19);
    for (const c of conflicts) expect(c.text).toBe('{"code":"ENTITLEMENT_STATE_CONFLICT","message":"already ACTIVE"}');
    expect(await countRows(f.sql), "one effect; every key remembers its answer").toEqual({
      entitlements: 1,
      audit: 1,
      outbox: 1,
      idempotency: 20,
    });
  });
});

describe("failures", () => {
  test("a failure inside the transaction is 500 INTERNAL_ERROR and leaves nothing behind", async () => {
    await f.sql.unsafe(`
      create function entitlement.fail_audit() returns trigger language plpgsql as $$
      begin raise exception 'injected audit failure'; end $$;
      create trigger fail_audit before insert on entitlement.entitlement_audit
        for each row when (new.user_id = 'explode') execute function entitlement.fail_audit();`);
    try {
      const errorsBefore = await commandCount(f.registry, "GRANT", "error");
      const reply = await grant("k1", { ...vectorBody, user_id: "explode" });
      expect(reply.status).toBe(500);
      expect(reply.contentType).toStartWith("application/json");
      expect(reply.text, "no SQL or exception text reaches the client").toBe(
        '{"code":"INTERNAL_ERROR","message":"internal error"}',
      );
      expect(await countRows(f.sql), "the transaction rolled back as a whole").toEqual({
        entitlements: 0,
        audit: 0,
        outbox: 0,
        idempotency: 0,
      });
      expect(await commandCount(f.registry, "GRANT", "error")).toBe(errorsBefore + 1);
    } finally {
      await f.sql.unsafe("drop function entitlement.fail_audit() cascade");
    }
    const retry = await grant("k1", { ...vectorBody, user_id: "explode" });
    expect(retry.status, "the failed attempt stored nothing, so the key works afterwards").toBe(200);
  });

  test("a request stuck behind a lock is cut off by the statement timeout: 503 NOT_READY, nothing written", async () => {
    const app = appOn(f.sql, { statementTimeoutMs: 500 });
    const holder = await f.sql.reserve();
    try {
      await holder`select pg_advisory_lock(${idempotencyLockKey("held").toString()}::bigint)`;
      const started = performance.now();
      const reply = await send(app, commandRequest("grants", vectorBody, { "idempotency-key": "held" }));
      expect(performance.now() - started, "the wait is bounded by the 500ms statement timeout").toBeLessThan(5_000);
      expect(reply.status).toBe(503);
      expect(reply.json).toEqual({ code: "NOT_READY", message: "database unavailable, retry later" });
      expect(await countRows(f.sql)).toEqual({ entitlements: 0, audit: 0, outbox: 0, idempotency: 0 });
    } finally {
      await holder`select pg_advisory_unlock_all()`;
      holder.release();
    }
  });

  test("an unreachable database: commands and the list are 503 NOT_READY, /readyz is 503", async () => {
    const sql = unreachableDatabase("entitlement", 2);
    const registry = createRegistry("entitlement");
    const app = appOn(sql, { registry });
    try {
      const command = await send(app, commandRequest("revokes", vectorBody, { "idempotency-key": "k" }));
      expect(command.status).toBe(503);
      expect(command.json.code).toBe("NOT_READY");
      const list = await send(app, new Request("http://localhost/v1/users/u/entitlements"));
      expect(list.status).toBe(503);
      expect(list.contentType).toStartWith("application/json");
      const ready = await send(app, new Request("http://localhost/readyz"));
      expect(ready.status).toBe(503);
      expect(ready.json.code).toBe("NOT_READY");
      expect(await commandCount(registry, "REVOKE", "error")).toBe(1);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});
