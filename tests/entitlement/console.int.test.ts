// Entitlement's /console through the real app on its own database: it is off unless enabled; people sign in with an
// API token whose scopes decide what they may do; a grant from the form goes through the API's command path (audit
// caller console:<name>, idempotent per form); forged CSRF changes nothing; values are rendered as text.
import { afterAll, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type AppDeps, createApp } from "../../src/entitlement/app.ts";
import type { Caller } from "../../src/shared/auth/guard.ts";
import type { Refusal } from "../../src/shared/auth/refusal.ts";
import { parseTokenEntries, tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { createLogger } from "../../src/shared/logger.ts";
import { type ConsoleClient, consoleClient, hiddenField, signIn } from "../support/console-client.ts";
import { unreachableDatabase } from "../support/infra.ts";
import { type ApiFixture, countRows, openApi } from "./api.helpers.ts";

// Hooks too (bunfig's timeout does not reach them): cloning the database on a loaded machine can take seconds.
setDefaultTimeout(60_000);

const TOKENS = { admin: "ent_console-admin-token", reader: "ent_console-reader-token" };
const auth = {
  disabled: false,
  metricsPublic: false,
  tokens: parseTokenEntries(
    [tokenEntryLine("support-admin", TOKENS.admin, "read+write"), tokenEntryLine("viewer", TOKENS.reader, "read")].join(
      ",",
    ),
  ).entries,
};
const CONSOLE = { enabled: true, idleMs: 60_000, alwaysSecure: false };

let f: ApiFixture;
const lines: string[] = [];
const build = (extra: Partial<AppDeps> = {}) =>
  createApp({
    sql: f.sql,
    log: createLogger({ level: "debug", service: "t", destination: { write: (l: string) => lines.push(l) } }),
    now: () => new Date(),
    idempotencyTtlHours: 24,
    auth,
    console: CONSOLE,
    ...extra,
  });
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  f = await openApi("ent_console");
  app = build();
});
afterAll(() => f.close());
beforeEach(async () => {
  await f.reset();
});

async function signedIn(token: string): Promise<ConsoleClient> {
  const client = consoleClient((r) => app.handle(r));
  expect((await signIn(client, token)).status, "signed in").toBe(303);
  return client;
}
const userPage = (client: ConsoleClient, user: string) =>
  client.get(`/console/users?user_id=${encodeURIComponent(user)}`);

async function grantFromForm(client: ConsoleClient, user: string, sku: string, extra: Record<string, string> = {}) {
  const page = await userPage(client, user);
  const fields = {
    csrf: hiddenField(page.text, "csrf", 'data-testid="grant-form"'),
    form_token: hiddenField(page.text, "form_token", 'data-testid="grant-form"'),
    user_id: user,
    stock_keeping_unit: sku,
    reason: "compensation",
    ...extra,
  };
  return { fields, reply: await client.post("/console/actions/grant", fields) };
}

describe("entitlement console", () => {
  test("is off unless enabled: /console is an API path like any other (401 without a bearer token)", async () => {
    const off = createApp({
      sql: f.sql,
      log: createLogger({ level: "silent", service: "t" }),
      now: () => new Date(),
      idempotencyTtlHours: 24,
      auth,
    });
    expect((await off.handle(new Request("http://localhost/console/sign-in"))).status).toBe(401);
  });

  test("on, its pages stay out of /openapi.json: they are not API", async () => {
    const doc = await app.handle(
      new Request("http://localhost/openapi.json", { headers: { authorization: `Bearer ${TOKENS.reader}` } }),
    );
    const paths = Object.keys(((await doc.json()) as { paths: Record<string, unknown> }).paths);
    expect(paths.some((p) => p.startsWith("/v1/"))).toBe(true);
    expect(paths.filter((p) => p.startsWith("/console"))).toEqual([]);
  });

  test("no session: the sign-in page; a read token may look but not act", async () => {
    const anonymous = consoleClient((r) => app.handle(r));
    expect((await userPage(anonymous, "u1")).location).toBe("/console/sign-in");
    const reader = await signedIn(TOKENS.reader);
    const page = await userPage(reader, "u1");
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('data-testid="grant-form"');
    const attempt = await reader.post("/console/actions/grant", {
      csrf: hiddenField(page.text, "csrf"),
      form_token: "t".repeat(24),
      user_id: "u1",
      stock_keeping_unit: "sku",
      reason: "r",
    });
    expect(attempt.status, "a read token cannot grant").toBe(403);
    expect((await countRows(f.sql)).entitlements).toBe(0);
  });

  test("a grant from the form is the API's command: ACTIVE, audited as console:<name>, once per form", async () => {
    const admin = await signedIn(TOKENS.admin);
    const { fields, reply } = await grantFromForm(admin, "player-1", "sword.gold");
    expect(reply.status).toBe(303);
    const again = await admin.post("/console/actions/grant", fields);
    expect(again.status, "the double submit is answered too").toBe(303);
    const page = await userPage(admin, "player-1");
    expect(page.text).toMatch(/data-testid="entitlement-row">[\s\S]*sword\.gold[\s\S]*ACTIVE/);
    expect(page.text).toContain("granted <bdi>sword.gold</bdi>: ACTIVE, version 0");
    expect(await countRows(f.sql), "a double submit of one form is one change").toMatchObject({
      entitlements: 1,
      audit: 1,
      outbox: 1,
      idempotency: 1,
    });
    const [audit] = await f.sql`select caller, source, source_id from entitlement_audit`;
    expect(audit).toEqual({ caller: "console:support-admin", source: "compensation", source_id: "support-console" });
    const history = await admin.get("/console/history?user_id=player-1&sku=sword.gold");
    expect(history.text).toContain("console:support-admin");
  });

  test("a forged or missing CSRF token is 403 and grants nothing", async () => {
    const admin = await signedIn(TOKENS.admin);
    const page = await userPage(admin, "player-2");
    const fields = {
      form_token: hiddenField(page.text, "form_token", 'data-testid="grant-form"'),
      user_id: "player-2",
      stock_keeping_unit: "sku",
      reason: "r",
    };
    expect((await admin.post("/console/actions/grant", fields)).status).toBe(403);
    expect((await admin.post("/console/actions/grant", { ...fields, csrf: "forged" })).status).toBe(403);
    expect((await countRows(f.sql)).entitlements).toBe(0);
  });

  test("revoke, extend and cancel go through the same path; refusals are notices on the user's page", async () => {
    const admin = await signedIn(TOKENS.admin);
    await grantFromForm(admin, "player-3", "cape", { expires_at: new Date(Date.now() + 3_600_000).toISOString() });
    const act = async (path: string, extra: Record<string, string>, marker: string) => {
      const page = await userPage(admin, "player-3");
      const form = {
        csrf: hiddenField(page.text, "csrf", marker),
        form_token: hiddenField(page.text, "form_token", marker),
      };
      const reply = await admin.post(path, { ...form, user_id: "player-3", ...extra });
      expect(reply.location).toBe("/console/users?user_id=player-3");
      return (await userPage(admin, "player-3")).text;
    };
    const later = new Date(Date.now() + 86_400_000).toISOString();
    const extended = await act(
      "/console/actions/extend",
      { stock_keeping_unit: "cape", reason: "sorry", expires_at: later },
      'data-testid="extend-form"',
    );
    expect(extended).toContain("extended <bdi>cape</bdi>: ACTIVE, version 1");
    const revoked = await act(
      "/console/actions/revoke",
      { stock_keeping_unit: "cape", reason: "refund" },
      'data-testid="revoke-form"',
    );
    expect(revoked).toContain("revoked <bdi>cape</bdi>: REVOKED, version 2");
    const bad = await act(
      "/console/actions/grant",
      { stock_keeping_unit: "x", reason: "r", expires_at: "tomorrow" },
      'data-testid="grant-form"',
    );
    expect(bad).toContain("<bdi>expires_at must be an ISO-8601 date-time");

    const [reservation] = await f.sql<{ reservation_id: string }[]>`
      insert into point_reservations (reservation_id, user_id, point_amount, execute_at, status, due_at, created_at, updated_at)
      values (gen_random_uuid(), 'player-3', 50, now() + interval '1 day', 'PENDING', now() + interval '1 day', now(), now())
      returning reservation_id::text`;
    const id = reservation?.reservation_id ?? "";
    const cancelled = await act("/console/actions/cancel", { reservation_id: id }, 'action="/console/actions/cancel"');
    expect(cancelled).toContain(`cancelled reservation <bdi>${id}</bdi>: CANCELLED`);
    const [row] = await f.sql`select status from point_reservations where reservation_id = ${id}::uuid`;
    expect(row?.status).toBe("CANCELLED");
    const [audit] =
      await f.sql`select caller from point_audit where reservation_id = ${id}::uuid and action = 'CANCEL'`;
    expect(audit?.caller).toBe("console:support-admin");
  });

  test("outbox health: counts by status, FAILED events, requeue", async () => {
    const admin = await signedIn(TOKENS.admin);
    await grantFromForm(admin, "player-4", "shield");
    await f.sql`update outbox_events set status = 'FAILED', attempt_count = 10, last_error = 'broker <down>'`;
    const page = await admin.get("/console/outbox");
    expect(page.text).toMatch(/FAILED<\/td><td>1</);
    expect(page.text).toContain("broker &lt;down&gt;");
    const [event] = await f.sql<{ event_id: string }[]>`select event_id::text from outbox_events`;
    const reply = await admin.post("/console/outbox/requeue", {
      csrf: hiddenField(page.text, "csrf", 'action="/console/outbox/requeue"'),
      form_token: hiddenField(page.text, "form_token", 'action="/console/outbox/requeue"'),
      event_id: event?.event_id ?? "",
    });
    expect(reply.location).toBe("/console/outbox");
    const [after] = await f.sql`select status, attempt_count from outbox_events`;
    expect(after).toEqual({ status: "PENDING", attempt_count: 0 });
  });

  test("a script in a user id is rendered as text, in the page and in every form", async () => {
    const admin = await signedIn(TOKENS.admin);
    const evil = `<script>alert("x")</script>\u202E'`;
    const page = await userPage(admin, evil);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain("<script>alert");
    expect(page.text).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;\u202E&#39;");
  });

  test("a token's console requests share its API rate; refused sign-ins are limited, the right token never", async () => {
    const limited = build({ limits: { rateLimit: { ratePerSecond: 0.001, burst: 3 } } });
    const client = consoleClient((r) => limited.handle(r));
    await signIn(client, TOKENS.reader);
    for (let i = 0; i < 3; i++) expect((await client.get("/console/users")).status).toBe(200);
    const slow = await client.get("/console/users");
    expect([slow.status, Number(slow.headers.get("retry-after")) >= 1], "the token's bucket is empty").toEqual([
      429,
      true,
    ]);
    const guesser = consoleClient((r) => limited.handle(r));
    const statuses = new Set<number>();
    for (let i = 0; i < 40; i++) {
      const reply = await signIn(guesser, `ent_guess-${i}`);
      statuses.add(reply.status);
      if (reply.status === 429) expect(Number(reply.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    expect([...statuses], "refusals, then 429 with Retry-After once over the allowance").toEqual([401, 429]);
    const operator = consoleClient((r) => limited.handle(r));
    expect((await signIn(operator, TOKENS.admin)).status, "the right token gets in through any flood").toBe(303);
  });

  test("a token without the read scope opens no session (the pages all need it)", async () => {
    const writerOnly = build({
      auth: { ...auth, tokens: parseTokenEntries(tokenEntryLine("pipeline", "ent_write-only-token", "write")).entries },
    });
    const client = consoleClient((r) => writerOnly.handle(r));
    const reply = await signIn(client, "ent_write-only-token");
    expect(reply.status).toBe(403);
    expect(reply.text).toContain("does not have the read scope");
    expect(client.jar.has("entitlement_console_session")).toBe(false);
    const zeroScope = build({
      auth: {
        ...auth,
        jwt: async (): Promise<Caller | Refusal> => ({
          name: "jwt:nobody",
          scopes: new Set(),
          scopeNames: { read: "entitlements.read", write: "entitlements.write" },
        }),
      },
    });
    const jwtClient = consoleClient((r) => zeroScope.handle(r));
    const refused = await signIn(jwtClient, "eyJ.no.scope");
    expect(refused.status, "a JWT without scopes neither").toBe(403);
    expect(refused.text, "named as its issuer names it").toContain("does not have the entitlements.read scope");
  });

  test("a JWT that cannot be checked yet (the issuer's keys never fetched) is 503 with Retry-After, not a refusal", async () => {
    const jwtApp = build({
      auth: { ...auth, jwt: async (): Promise<Caller | Refusal> => ({ refused: "keys_unavailable" }) },
    });
    const client = consoleClient((r) => jwtApp.handle(r));
    const reply = await signIn(client, "eyJ.early.sig");
    expect([reply.status, reply.headers.get("retry-after")]).toEqual([503, "5"]);
  });

  test("a session opened with a JWT ends at the next request once the token stops verifying (its key withdrawn)", async () => {
    const issuer = { keyPublished: true };
    const jwtApp = build({
      auth: {
        ...auth,
        jwt: async (): Promise<Caller | Refusal> =>
          issuer.keyPublished ? { name: "jwt:carol", scopes: new Set(["read"] as const) } : { refused: "unknown_key" },
      },
    });
    const client = consoleClient((r) => jwtApp.handle(r));
    expect((await signIn(client, "eyJ.carol.sig")).status).toBe(303);
    expect((await client.get("/console/users")).status).toBe(200);
    issuer.keyPublished = false;
    expect((await client.get("/console/users")).location).toBe("/console/sign-in");
    issuer.keyPublished = true;
    expect((await client.get("/console/users")).location, "ended for good: sign in again").toBe("/console/sign-in");
  });

  test("a SKU with a right-to-left override cannot reorder the notice around it", async () => {
    const admin = await signedIn(TOKENS.admin);
    await grantFromForm(admin, "player-6", "sku\u202E");
    const page = await userPage(admin, "player-6");
    expect(page.text).toContain("granted <bdi>sku\u202E</bdi>: ACTIVE, version 0");
  });

  test("a user id with a malformed percent escape is 400, not a lookup of U+FFFD", async () => {
    const admin = await signedIn(TOKENS.admin);
    const page = await admin.get("/console/users?user_id=u-%ff");
    expect(page.status).toBe(400);
    expect(page.text).not.toContain("u-\uFFFD");
  });

  test("during a database outage every page is 503 with Retry-After", async () => {
    const down = build({
      sql: unreachableDatabase("entitlement"),
    });
    const client = consoleClient((r) => down.handle(r));
    await signIn(client, TOKENS.admin);
    for (const path of ["/console/users?user_id=u1", "/console/outbox", "/console/history?user_id=u1&sku=s"]) {
      const page = await client.get(path);
      expect([page.status, page.headers.get("retry-after")], path).toEqual([503, "1"]);
    }
  });

  test("a JWT access token signs in through the API's JWT check, as the caller it stands for", async () => {
    const jwtApp = build({
      auth: {
        ...auth,
        jwt: async (token): Promise<Caller | Refusal> =>
          token === "eyJ.good.sig"
            ? { name: "jwt:alice", scopes: new Set(["read"] as const) }
            : { refused: "malformed" },
      },
    });
    const client = consoleClient((r) => jwtApp.handle(r));
    expect((await signIn(client, "eyJ.forged.sig")).status).toBe(401);
    expect((await signIn(client, "eyJ.good.sig")).status).toBe(303);
    expect((await client.get("/console/users")).text).toContain("jwt:alice");
  });

  test("a session opened with a JWT ends when the token expires, however active", async () => {
    let expiresAtMs = 0;
    const jwtApp = build({
      auth: {
        ...auth,
        jwt: async (): Promise<Caller | Refusal> => ({
          name: "jwt:bob",
          scopes: new Set(["read"] as const),
          expiresAtMs,
        }),
      },
    });
    const client = consoleClient((r) => jwtApp.handle(r));
    expiresAtMs = Date.now() + 1_000;
    expect((await signIn(client, "eyJ.short.lived")).status).toBe(303);
    expect((await client.get("/console/users")).status, "in use before the token's exp").toBe(200);
    await Bun.sleep(Math.max(0, expiresAtMs - Date.now()) + 50);
    const after = await client.get("/console/users");
    expect(after.status, "after exp: back to the sign-in page").toBe(303);
    expect(after.headers.get("location")).toBe("/console/sign-in");
  });

  test("the token is never logged, and never in a URL the console makes", async () => {
    const admin = await signedIn(TOKENS.admin);
    const page = await userPage(admin, "player-5");
    expect(lines.join("\n")).not.toContain(TOKENS.admin);
    expect(page.text).not.toContain(TOKENS.admin);
  });
});
