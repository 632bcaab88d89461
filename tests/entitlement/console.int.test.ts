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
    expect(page.text).toContain("granted sword.gold: ACTIVE, version 0");
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
    expect(extended).toContain("extended cape: ACTIVE, version 1");
    const revoked = await act(
      "/console/actions/revoke",
      { stock_keeping_unit: "cape", reason: "refund" },
      'data-testid="revoke-form"',
    );
    expect(revoked).toContain("revoked cape: REVOKED, version 2");
    const bad = await act(
      "/console/actions/grant",
      { stock_keeping_unit: "x", reason: "r", expires_at: "tomorrow" },
      'data-testid="grant-form"',
    );
    expect(bad).toContain("expires_at must be an ISO-8601 date-time");

    const [reservation] = await f.sql<{ reservation_id: string }[]>`
      insert into point_reservations (reservation_id, user_id, point_amount, execute_at, status, due_at, created_at, updated_at)
      values (gen_random_uuid(), 'player-3', 50, now() + interval '1 day', 'PENDING', now() + interval '1 day', now(), now())
      returning reservation_id::text`;
    const id = reservation?.reservation_id ?? "";
    const cancelled = await act("/console/actions/cancel", { reservation_id: id }, 'action="/console/actions/cancel"');
    expect(cancelled).toContain(`cancelled reservation ${id}: CANCELLED`);
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

  test("rate limits apply to a token's console requests and to sign-in attempts", async () => {
    const limited = build({ limits: { rateLimit: { ratePerSecond: 0.001, burst: 3 } } });
    const client = consoleClient((r) => limited.handle(r));
    await signIn(client, TOKENS.reader);
    for (let i = 0; i < 3; i++) expect((await client.get("/console/users")).status).toBe(200);
    expect((await client.get("/console/users")).status, "the token's bucket is empty").toBe(429);
    const guesser = consoleClient((r) => limited.handle(r));
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await signIn(guesser, "ent_guess")).status);
    expect(statuses, "the sign-in attempts share one bucket (the first took one token)").toEqual([401, 401, 429, 429]);
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
