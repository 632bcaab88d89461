import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { NOTIFICATION_TYPES } from "../../src/notification/intake/consumer/handler.ts";
import { createAutoDisable } from "../../src/notification/work/endpoints/disable.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { useTestDatabase } from "../support/infra.ts";
import { notificationApp } from "./app.helpers.ts";
import { endpointApp, READER, WRITER } from "./endpoints.helpers.ts";
import { testMetrics } from "./helpers.ts";

setDefaultTimeout(30_000);

const f = useTestDatabase("notif_endpoints_api", { service: "notification" });
const api = () => endpointApp(f.sql).call;

describe("webhook endpoints admin API", () => {
  test("without tokens the routes answer 404", async () => {
    const app = notificationApp(f.sql);
    const response = await app.handle(new Request("http://localhost/v1/webhook-endpoints"));
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: "NOT_FOUND" });
  });

  test("401 without or with an unknown token, 403 for a read token on a write route", async () => {
    const call = api();
    expect((await call("GET", "/v1/webhook-endpoints", undefined, "")).status).toBe(401);
    const unknown = await call("GET", "/v1/webhook-endpoints", undefined, "not-a-configured-token");
    expect(unknown.status).toBe(401);
    expect(unknown.body.code).toBe("UNAUTHORIZED");
    const forbidden = await call("POST", "/v1/webhook-endpoints", { url: "http://127.0.0.1:1/x" }, READER);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.code).toBe("FORBIDDEN");
    expect((await call("GET", "/v1/webhook-endpoints", undefined, READER)).status).toBe(200);
  });

  test("create answers 201 with a whsec_ secret shown only there; get, list, patch and delete", async () => {
    const call = api();
    const created = await call("POST", "/v1/webhook-endpoints", {
      url: "http://127.0.0.1:9/a",
      description: "game server",
      event_types: ["EntitlementGranted"],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      url: "http://127.0.0.1:9/a",
      description: "game server",
      event_types: ["EntitlementGranted"],
      enabled: true,
      disabled_reason: null,
    });
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    const id = created.body.endpoint_id;
    const got = await call("GET", `/v1/webhook-endpoints/${id}`, undefined, READER);
    expect(got.status).toBe(200);
    expect(got.body.secret).toBeUndefined();
    expect(got.body.event_types).toEqual(["EntitlementGranted"]);
    const stored = await f.sql<{ secret_ciphertext: string }[]>`
      select secret_ciphertext from webhook_endpoints where endpoint_id = ${id}`;
    expect(stored[0]?.secret_ciphertext, "the database holds no secret in clear").not.toContain(
      created.body.secret.slice(6),
    );

    const every = await call("POST", "/v1/webhook-endpoints", { url: "http://127.0.0.1:9/b" });
    expect(every.body.event_types, "no event_types: every type").toBeNull();
    const first = await call("GET", "/v1/webhook-endpoints?limit=1");
    expect(first.body.endpoints).toHaveLength(1);
    expect(first.body.endpoints[0].secret, "the list shows no secret").toBeUndefined();
    expect(first.body.next_cursor).toBeString();
    const second = await call("GET", `/v1/webhook-endpoints?limit=1&cursor=${first.body.next_cursor}`);
    expect(second.body.endpoints[0].endpoint_id).not.toBe(first.body.endpoints[0].endpoint_id);
    expect((await call("GET", "/v1/webhook-endpoints?limit=0")).status).toBe(400);

    const patched = await call("PATCH", `/v1/webhook-endpoints/${id}`, { enabled: false, description: "paused" });
    expect(patched.body).toMatchObject({ enabled: false, description: "paused", url: "http://127.0.0.1:9/a" });
    expect((await call("DELETE", `/v1/webhook-endpoints/${id}`)).status).toBe(204);
    expect((await call("GET", `/v1/webhook-endpoints/${id}`)).status).toBe(404);
    expect((await call("DELETE", `/v1/webhook-endpoints/${id}`)).status).toBe(404);
    expect((await call("GET", "/v1/webhook-endpoints/not-a-uuid")).status).toBe(404);
  });

  test("bad bodies are 400 with the envelope", async () => {
    const call = api();
    expect((await call("POST", "/v1/webhook-endpoints", { description: "no url" })).body.code).toBe("BAD_REQUEST");
    expect((await call("POST", "/v1/webhook-endpoints", { url: "not a url" })).body.code).toBe("BAD_REQUEST");
    const types = await call("POST", "/v1/webhook-endpoints", { url: "http://127.0.0.1:9/", event_types: [] });
    expect(types.status).toBe(400);
    const typo = await call("POST", "/v1/webhook-endpoints", {
      url: "http://127.0.0.1:9/",
      event_types: ["EntitlementGrant"],
    });
    expect(typo.status, "an unknown notification type is refused").toBe(400);
    const body = JSON.stringify({ url: "http://127.0.0.1:9/", description: "x".repeat(20_000) });
    const { app } = endpointApp(f.sql);
    const headers = { authorization: `Bearer ${WRITER}`, "content-type": "application/json" };
    const large = await app.handle(
      new Request("http://localhost/v1/webhook-endpoints", {
        method: "POST",
        headers: { ...headers, "content-length": String(body.length) },
        body,
      }),
    );
    expect(large.status, "a declared body over 16 KiB is refused before it is read").toBe(413);
    expect(((await large.json()) as { code: string }).code).toBe("PAYLOAD_TOO_LARGE");
  });

  test("an unknown event type is a 400 that names the field, the value and every valid type, on create and change", async () => {
    const call = api();
    const typo = await call("POST", "/v1/webhook-endpoints", {
      url: "http://127.0.0.1:9/",
      event_types: ["EntitlementGranted", "EntitlementGrant"],
    });
    expect(typo.status).toBe(400);
    expect(typo.body.code).toBe("BAD_REQUEST");
    expect(typo.body.message).toContain("event_types[1]");
    expect(typo.body.message).toContain('"EntitlementGrant"');
    for (const type of NOTIFICATION_TYPES) expect(typo.body.message, `lists ${type}`).toContain(type);
    const created = await call("POST", "/v1/webhook-endpoints", { url: "http://127.0.0.1:9/t" });
    const patched = await call("PATCH", `/v1/webhook-endpoints/${created.body.endpoint_id}`, { event_types: [42] });
    expect(patched.status).toBe(400);
    expect(patched.body.message).toContain("event_types[0]");
    for (const type of NOTIFICATION_TYPES) expect(patched.body.message, `lists ${type}`).toContain(type);
    const unchanged = await call("GET", `/v1/webhook-endpoints/${created.body.endpoint_id}`);
    expect(unchanged.body.event_types, "a refused change changes nothing").toBeNull();
  });

  test("secret rotation answers a new secret; the overlap is at most 7d", async () => {
    const call = api();
    const created = await call("POST", "/v1/webhook-endpoints", { url: "http://127.0.0.1:9/r" });
    const path = `/v1/webhook-endpoints/${created.body.endpoint_id}/secret/rotate`;
    const rotated = await call("POST", path, { overlap: "7d" });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    const after = await call("GET", `/v1/webhook-endpoints/${created.body.endpoint_id}`);
    expect(Date.parse(after.body.previous_secret_until) - Date.now()).toBeGreaterThan(6 * 86_400_000);
    expect((await call("POST", path, { overlap: "8d" })).status).toBe(400);
    expect((await call("POST", path, { overlap: "soon" })).status).toBe(400);
    expect(
      (await call("POST", "/v1/webhook-endpoints/00000000-0000-4000-8000-000000000000/secret/rotate", {})).status,
    ).toBe(404);
  });

  test("the attempts log pages through more than ten attempts, every one once, newest first by number", async () => {
    const call = api();
    const created = await call("POST", "/v1/webhook-endpoints", { url: "http://127.0.0.1:9/log" });
    const id = created.body.endpoint_id as string;
    const notificationId = crypto.randomUUID();
    const inserted = await f.sql<{ attempt_id: string }[]>`
      insert into webhook_attempts (endpoint_id, notification_id, attempt, at, duration_ms)
      select ${id}, ${notificationId}, n, now(), 1 from generate_series(1, 25) n
      returning attempt_id::text as attempt_id`;
    const newestFirst = inserted.map((r) => BigInt(r.attempt_id)).sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
    const seen: bigint[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? "?limit=7" : `?limit=7&cursor=${cursor}`;
      const page = await call("GET", `/v1/webhook-endpoints/${id}/attempts${query}`, undefined, READER);
      expect(page.status).toBe(200);
      seen.push(...page.body.attempts.map((a: { attempt_id: string }) => BigInt(a.attempt_id)));
      cursor = page.body.next_cursor;
    } while (cursor !== null && seen.length <= inserted.length);
    expect(seen, "every attempt once, in descending numeric order of attempt_id").toEqual(newestFirst);
  });

  test.each([
    [30 * 60_000, "30m"],
    [90 * 60_000, "90m"],
    [45_000, "45s"],
    [36 * 3_600_000, "36h"],
    [5 * 86_400_000, "5d"],
  ])("an endpoint disabled after %d ms of failures says so in the window's own unit (%s)", async (windowMs, text) => {
    const call = api();
    const created = await call("POST", "/v1/webhook-endpoints", { url: "http://127.0.0.1:9/off" });
    const id = created.body.endpoint_id as string;
    const now = new Date();
    await f.sql`
      update webhook_endpoints set failing_since = ${new Date(now.getTime() - windowMs - 1_000)}
      where endpoint_id = ${id}`;
    const disable = createAutoDisable({
      sql: f.sql,
      log: silentLogger,
      now: () => now,
      disableAfterMs: windowMs,
      disabled: testMetrics().metrics.endpointsDisabled,
    });
    await disable([id]);
    const after = await call("GET", `/v1/webhook-endpoints/${id}`, undefined, READER);
    expect(after.body.enabled).toBe(false);
    expect(after.body.disabled_reason).toBe(`every attempt failed for ${text}`);
  });

  test("replay validates its window", async () => {
    const call = api();
    const created = await call("POST", "/v1/webhook-endpoints", { url: "http://127.0.0.1:9/w" });
    const path = `/v1/webhook-endpoints/${created.body.endpoint_id}/replay`;
    expect((await call("POST", path, { since: "yesterday" })).status).toBe(400);
    const backwards = await call("POST", path, { since: "2030-01-02T00:00:00Z", until: "2030-01-01T00:00:00Z" });
    expect(backwards.status).toBe(400);
    const empty = await call("POST", path, { since: "2020-01-01T00:00:00Z" });
    expect(empty.status).toBe(202);
    expect(empty.body).toMatchObject({ notifications: 0 });
  });
});
