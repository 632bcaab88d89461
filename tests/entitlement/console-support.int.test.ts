// The support work of Entitlement's console beyond one user, through the real app on its own database: a bulk file
// uploaded, previewed without a change, applied in the background and applied again (nothing more changes), its
// result downloaded as CSV; the undo of a console change (a grant, a revoke, an extension; once: a second undo changes
// nothing), and its refusals; the audit search by each filter, newest first, paged. A reader token may search but not
// upload.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { Registry } from "prom-client";
import { createApp } from "../../src/entitlement/app.ts";
import { createCommandMetrics } from "../../src/entitlement/features/commands/metrics.ts";
import { executeExtensionUndo } from "../../src/entitlement/features/extensions/undo.ts";
import { parseTokenEntries, tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { type ConsoleClient, consoleClient, hiddenField, signIn } from "../support/console-client.ts";
import { waitUntil } from "../support/wait.ts";
import { type ApiFixture, openApi } from "./api.helpers.ts";

setDefaultTimeout(60_000);

const TOKENS = { admin: "ent_support-admin-token", reader: "ent_support-reader-token" };
const auth = {
  disabled: false,
  metricsPublic: false,
  tokens: parseTokenEntries(
    [tokenEntryLine("lead", TOKENS.admin, "read+write"), tokenEntryLine("viewer", TOKENS.reader, "read")].join(","),
  ).entries,
};

let f: ApiFixture;
let app: ReturnType<typeof createApp>;
const clock: { at?: Date } = {};

beforeAll(async () => {
  f = await openApi("ent_support");
  app = createApp({
    sql: f.sql,
    log: silentLogger,
    now: () => clock.at ?? new Date(),
    idempotencyTtlHours: 24,
    auth,
    console: { enabled: true, idleMs: 600_000, alwaysSecure: false, undoWindowMs: 3_600_000 },
  });
});
afterAll(() => f.close());

async function signedIn(token: string): Promise<ConsoleClient> {
  const client = consoleClient((r) => app.handle(r));
  expect((await signIn(client, token)).status, "signed in").toBe(303);
  return client;
}

/** Uploads `csv` as the bulk form does (multipart), with the page's hidden fields. */
async function upload(client: ConsoleClient, csv: string, name = "compensation.csv", csrf?: string) {
  const page = await client.get("/console/bulk");
  const form = new FormData();
  form.set("csrf", csrf ?? hiddenField(page.text, "csrf", 'data-testid="bulk-form"'));
  form.set("form_token", hiddenField(page.text, "form_token", 'data-testid="bulk-form"'));
  form.set("file", new Blob([csv], { type: "text/csv" }), name);
  const cookie = [...client.jar].map(([k, v]) => `${k}=${v}`).join("; ");
  const reply = await app.handle(
    new Request("http://localhost/console/bulk/upload", { method: "POST", headers: { cookie }, body: form }),
  );
  return { status: reply.status, location: reply.headers.get("location") };
}

const testId = (text: string, id: string) => new RegExp(`data-testid="${id}">([^<]*)<`).exec(text)?.[1];

async function applyUploaded(client: ConsoleClient, previewPath: string) {
  const preview = await client.get(previewPath);
  const applied = await client.post("/console/bulk/apply", {
    csrf: hiddenField(preview.text, "csrf", 'action="/console/bulk/apply"'),
    form_token: hiddenField(preview.text, "form_token", 'action="/console/bulk/apply"'),
    upload: hiddenField(preview.text, "upload", 'action="/console/bulk/apply"'),
  });
  expect(applied.status).toBe(303);
  const runPath = applied.location as string;
  return waitUntil(async () => {
    const run = await client.get(runPath);
    return run.text.includes('data-testid="bulk-result"') ? { run, runPath } : undefined;
  }, "the bulk run to finish");
}

const CSV = [
  "user_id,stock_keeping_unit,action,reason",
  "s-u1,sword,grant,outage",
  "s-u1,shield,grant,outage",
  "s-u2,sword,revoke,refund",
  "s-u3,,grant,outage",
].join("\r\n");

test("a bulk file: preview changes nothing, apply changes each valid row once, applying again changes nothing", async () => {
  const client = await signedIn(TOKENS.admin);
  const up = await upload(client, CSV);
  expect(up.status).toBe(303);
  const preview = await client.get(up.location as string);
  expect([
    testId(preview.text, "bulk-will-change"),
    testId(preview.text, "bulk-unchanged"),
    testId(preview.text, "bulk-invalid"),
  ]).toEqual(["3", "0", "1"]);
  expect(preview.text).toContain("stock_keeping_unit is required");
  const [before] = await f.sql<{ n: number }[]>`select count(*)::int as n from entitlement_audit`;
  expect(before?.n, "a preview changes nothing").toBe(0);

  const { run, runPath } = await applyUploaded(client, up.location as string);
  expect(testId(run.text, "bulk-result-changed")).toBe("3");
  expect(testId(run.text, "bulk-result-invalid")).toBe("1");
  const callers = await f.sql<{ caller: string }[]>`select distinct caller from entitlement_audit`;
  expect(callers.map((c) => c.caller)).toEqual(["console:lead"]);
  const traces = await f.sql<{ trace_id: string }[]>`select distinct trace_id from entitlement_audit`;
  expect(
    traces.map((t) => t.trace_id),
    "the run is one trace, shown on its page",
  ).toEqual([testId(run.text, "bulk-trace-id") as string]);
  expect(traces[0]?.trace_id, "a W3C trace id: 32 lower-case hex digits, not all zeros").toMatch(/^[0-9a-f]{32}$/);
  expect(traces[0]?.trace_id).not.toMatch(/^0+$/);
  const csvLink = /href="(\/console\/bulk\/result\.csv\?job=[^"]+)"/.exec(run.text)?.[1] as string;
  const download = await client.get(csvLink.replaceAll("&amp;", "&"));
  expect(download.headers.get("content-disposition")).toBe('attachment; filename="compensation.csv.result.csv"');
  expect(download.text.split("\r\n")[1]).toMatch(/^2,s-u1,sword,grant,changed,0,$/);
  expect(runPath).toContain("/console/bulk/run?job=");

  const again = await upload(client, CSV);
  const second = await client.get(again.location as string);
  expect([testId(second.text, "bulk-will-change"), testId(second.text, "bulk-unchanged")]).toEqual(["0", "3"]);
  const { run: rerun } = await applyUploaded(client, again.location as string);
  expect(testId(rerun.text, "bulk-result-already_applied"), "the same file replays its keys").toBe("3");
  const [after] = await f.sql<{ n: number }[]>`select count(*)::int as n from entitlement_audit`;
  expect(after?.n, "applying the same file again changes nothing").toBe(3);
});

test("the apply button says how many rows will change, not how many are valid", async () => {
  const client = await signedIn(TOKENS.admin);
  const header = "user_id,stock_keeping_unit,action,reason";
  const first = await upload(client, `${header}\na-u1,banner,grant,outage\n`, "first.csv");
  await applyUploaded(client, first.location as string);
  const button = async (csv: string) => {
    const up = await upload(client, csv, "next.csv");
    const preview = await client.get(up.location as string);
    return /data-testid="bulk-apply">([^<]*)</.exec(preview.text)?.[1];
  };
  expect(await button(`${header}\na-u1,banner,grant,again\na-u2,,grant,outage\n`), "0 will change").toBe(
    "Apply: no row will change",
  );
  const some = `${header}\na-u1,banner,grant,again\na-u3,banner,grant,outage\na-u4,banner,grant,outage\n`;
  expect(await button(some), "2 will change, 1 already in that state").toBe("Apply: 2 rows will change");
  expect(await button(`${header}\na-u5,banner,grant,outage\n`)).toBe("Apply: 1 row will change");
});

test("a malformed file is refused with its line; a reader may not upload", async () => {
  const client = await signedIn(TOKENS.admin);
  const bad = await upload(client, 'user_id,stock_keeping_unit,action,reason\nu,s,grant,"open\n');
  expect(bad.location).toBe("/console/bulk");
  expect((await client.get("/console/bulk")).text).toContain("not valid CSV (line 2)");
  const forged = await upload(client, CSV, "forged.csv", "forged-csrf-token");
  expect(forged.status, "an upload without the session's CSRF token is refused").toBe(403);
  const huge = await upload(client, `user_id,stock_keeping_unit,action,reason\n${"u,s,grant,r\n".repeat(800_000)}`);
  expect(huge, "an upload over the bound is refused before it is read").toEqual({ status: 400, location: null });
  const reader = await signedIn(TOKENS.reader);
  expect((await reader.get("/console/bulk")).status).toBe(403);
  const otherPreview = await reader.get(bad.location as string);
  expect(otherPreview.status).toBe(403);
});

async function undoFrom(client: ConsoleClient, user: string, sku: string, reason = "mistake") {
  const history = await client.get(`/console/history?user_id=${user}&sku=${sku}`);
  const marker = 'action="/console/actions/undo"';
  if (!history.text.includes(marker)) return undefined;
  const fields = {
    csrf: hiddenField(history.text, "csrf", marker),
    form_token: hiddenField(history.text, "form_token", marker),
    user_id: user,
    stock_keeping_unit: sku,
    audit_id: hiddenField(history.text, "audit_id", marker),
    reason,
  };
  return { fields, reply: await client.post("/console/actions/undo", fields) };
}

test("undo: a console grant is revoked as the undo of its audit row, once; an API change offers no undo", async () => {
  const client = await signedIn(TOKENS.admin);
  const page = await client.get("/console/users?user_id=undo-u1");
  await client.post("/console/actions/grant", {
    csrf: hiddenField(page.text, "csrf", 'data-testid="grant-form"'),
    form_token: hiddenField(page.text, "form_token", 'data-testid="grant-form"'),
    user_id: "undo-u1",
    stock_keeping_unit: "cape",
    reason: "by mistake",
  });
  const [granted] = await f.sql<{ audit_id: string }[]>`
    select audit_id from entitlement_audit where user_id = 'undo-u1' and action = 'GRANT'`;
  const undo = await undoFrom(client, "undo-u1", "cape");
  expect(undo?.fields.audit_id).toBe(granted?.audit_id as string);
  const [row] = await f.sql<{ status: string; version: number }[]>`
    select status, version::int from entitlements where user_id = 'undo-u1' and stock_keeping_unit = 'cape'`;
  expect(row).toEqual({ status: "REVOKED", version: 1 });
  const [audit] = await f.sql<{ source_id: string; source: string; caller: string }[]>`
    select source_id, source, caller from entitlement_audit where user_id = 'undo-u1' and action = 'REVOKE'`;
  expect(audit).toEqual({ source_id: `undo:${granted?.audit_id}`, source: "mistake", caller: "console:lead" });

  const twice = await client.post("/console/actions/undo", { ...(undo?.fields as Record<string, string>) });
  expect(twice.status).toBe(303);
  const [count] = await f.sql<
    { n: number }[]
  >`select count(*)::int as n from entitlement_audit where user_id = 'undo-u1'`;
  expect(count?.n, "undoing twice changes nothing more").toBe(2);
  expect((await client.get("/console/users?user_id=undo-u1")).text).toContain("Already undone");

  const api = await app.handle(
    new Request("http://localhost/v1/entitlements/grants", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKENS.admin}`, "content-type": "application/json", "idempotency-key": "k1" },
      body: JSON.stringify({ user_id: "undo-u2", stock_keeping_unit: "cape", reason: "purchase", purchase_id: "p1" }),
    }),
  );
  expect(api.status).toBe(200);
  expect(await undoFrom(client, "undo-u2", "cape"), "a change made through the API offers no undo").toBeUndefined();

  clock.at = new Date(Date.now() + 2 * 3_600_000);
  expect(await undoFrom(client, "undo-u1", "cape"), "past the window: no undo offered").toBeUndefined();
  clock.at = undefined;
});

test("undo of a revoke grants again with the expiry the revoke cleared; a revoke of an item never granted offers none", async () => {
  const client = await signedIn(TOKENS.admin);
  const expiry = new Date(Date.now() + 30 * 86_400_000).toISOString();
  const act = (action: string, user: string, extra: Record<string, string> = {}) => change(client, action, user, extra);
  await act("grant", "undo-u3", { expires_at: expiry });
  await act("revoke", "undo-u3");
  const undo = await undoFrom(client, "undo-u3", "pass");
  expect(undo?.reply.status).toBe(303);
  const [row] = await f.sql<{ status: string; expires_at: Date | null }[]>`
    select status, expires_at from entitlements where user_id = 'undo-u3' and stock_keeping_unit = 'pass'`;
  expect(row?.status).toBe("ACTIVE");
  expect(row?.expires_at?.toISOString(), "the expiry the revoke cleared is back").toBe(expiry);

  await act("revoke", "undo-u4");
  expect(await undoFrom(client, "undo-u4", "pass"), "nothing was granted, so nothing to undo").toBeUndefined();

  // A bundle grant's audit detail has no expiry: the undo finds it in the expiry row the bundle wrote.
  const up = await upload(
    client,
    `user_id,stock_keeping_unit,action,reason,expires_at\nundo-u5,pass,grant,r,${expiry}\nundo-u5,cape,grant,r,${expiry}\n`,
  );
  await applyUploaded(client, up.location as string);
  await act("revoke", "undo-u5");
  await undoFrom(client, "undo-u5", "pass");
  const [bundled] = await f.sql<{ status: string; expires_at: Date | null }[]>`
    select status, expires_at from entitlements where user_id = 'undo-u5' and stock_keeping_unit = 'pass'`;
  expect(bundled).toEqual({ status: "ACTIVE", expires_at: new Date(expiry) });
});

/** A console change of `user`'s pass from the user's page, with the page's fresh form token. */
async function change(client: ConsoleClient, action: string, user: string, extra: Record<string, string> = {}) {
  const page = await client.get(`/console/users?user_id=${user}`);
  return client.post(`/console/actions/${action}`, {
    csrf: hiddenField(page.text, "csrf", 'data-testid="grant-form"'),
    form_token: hiddenField(page.text, "form_token", 'data-testid="grant-form"'),
    user_id: user,
    stock_keeping_unit: "pass",
    reason: "support",
    ...extra,
  });
}

const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const auditOf = (user: string) => f.sql<{ action: string; source_id: string; source: string; version: number }[]>`
  select action, source_id, source, version::int from entitlement_audit where user_id = ${user} order by version`;
const noticeOf = async (client: ConsoleClient, user: string) =>
  (await client.get(`/console/users?user_id=${user}`)).text;

test("undo of an extension: the expiry it replaced is back, audited as its undo, one event; twice changes nothing more", async () => {
  const client = await signedIn(TOKENS.admin);
  const [first, later] = [inDays(10), inDays(40)];
  await change(client, "grant", "undo-x1", { expires_at: first });
  await change(client, "extend", "undo-x1", { expires_at: later });
  const [extension] = await f.sql<{ audit_id: string }[]>`
    select audit_id from entitlement_audit where user_id = 'undo-x1' and action = 'EXTEND'`;
  const undo = await undoFrom(client, "undo-x1", "pass", "extended by mistake");
  expect(undo?.fields.audit_id, "the extension offers the undo").toBe(extension?.audit_id as string);
  expect(await noticeOf(client, "undo-x1")).toContain("Undid the extension, version 2");

  const [row] = await f.sql<{ status: string; version: number; expires_at: Date }[]>`
    select status, version::int, expires_at from entitlements where user_id = 'undo-x1'`;
  expect(row).toEqual({ status: "ACTIVE", version: 2, expires_at: new Date(first) });
  const undoId = `undo:${extension?.audit_id}`;
  expect((await auditOf("undo-x1")).at(-1)).toEqual({
    action: "EXTEND",
    source_id: undoId,
    source: "extended by mistake",
    version: 2,
  });
  const [record] = await f.sql<{ response_code: number }[]>`
    select response_code from idempotency_keys
    where caller = 'console:lead' and idem_key = ${`console-undo-${extension?.audit_id}`}`;
  expect(record?.response_code, "remembered under the undo's key").toBe(200);
  const events = await f.sql<{ event_type: string; payload: Record<string, unknown> }[]>`
    select event_type, payload from outbox_events where aggregate_key = 'undo-x1:pass' order by created_at`;
  expect(events.map((e) => e.event_type)).toEqual(["EntitlementGranted", "EntitlementExtended", "EntitlementExtended"]);
  expect(events[2]?.payload).toMatchObject({ expires_at: first, version: 2, source_id: undoId });
  const [expiry] = await f.sql<{ status: string; due_at: Date }[]>`
    select status, due_at from entitlement_expiries where user_id = 'undo-x1'`;
  expect(expiry, "the expiry is due at the earlier time again").toEqual({ status: "PENDING", due_at: new Date(first) });

  await client.post("/console/actions/undo", { ...(undo?.fields as Record<string, string>) });
  expect(await noticeOf(client, "undo-x1")).toContain("Already undone");
  expect((await auditOf("undo-x1")).length, "undoing twice changes nothing more").toBe(3);
  expect(await undoFrom(client, "undo-x1", "pass"), "the undo offers no undo in turn").toBeUndefined();
});

test("undo of an extension is refused when the entitlement changed since or the expiry it replaced has passed", async () => {
  const client = await signedIn(TOKENS.admin);
  const post = async (user: string, auditId: string) => {
    const page = await client.get(`/console/users?user_id=${user}`);
    await client.post("/console/actions/undo", {
      csrf: hiddenField(page.text, "csrf", 'data-testid="grant-form"'),
      form_token: hiddenField(page.text, "form_token", 'data-testid="grant-form"'),
      user_id: user,
      stock_keeping_unit: "pass",
      audit_id: auditId,
      reason: "mistake",
    });
    return noticeOf(client, user);
  };
  const extensions = async (user: string) =>
    f.sql<{ audit_id: string }[]>`
      select audit_id from entitlement_audit where user_id = ${user} and action = 'EXTEND' order by version`;

  // Extended twice: the first extension is no longer the latest change.
  await change(client, "grant", "undo-x2", { expires_at: inDays(10) });
  await change(client, "extend", "undo-x2", { expires_at: inDays(20) });
  await change(client, "extend", "undo-x2", { expires_at: inDays(30) });
  const [older] = await extensions("undo-x2");
  expect(await post("undo-x2", older?.audit_id as string)).toContain("The entitlement has changed since");
  expect((await auditOf("undo-x2")).length, "nothing written").toBe(3);

  // Granted to expire in two minutes, extended, then the two minutes pass: restoring it would revoke the item at once.
  await change(client, "grant", "undo-x3", { expires_at: new Date(Date.now() + 120_000).toISOString() });
  await change(client, "extend", "undo-x3", { expires_at: inDays(30) });
  const [extension] = await extensions("undo-x3");
  clock.at = new Date(Date.now() + 180_000);
  try {
    expect(await post("undo-x3", extension?.audit_id as string)).toContain(
      "the expiry before the extension has passed",
    );
  } finally {
    clock.at = undefined;
  }
  const [row] = await f.sql<{ version: number; expires_at: Date }[]>`
    select version::int, expires_at from entitlements where user_id = 'undo-x3'`;
  expect(row?.version, "nothing changed").toBe(1);

  // An extension recorded without the expiry it replaced (as the release before kept them), right after a bundle
  // grant: the bundle's audit detail has no expiry and the extension rewrote the expiry row, so nothing says it.
  const up = await upload(
    client,
    `user_id,stock_keeping_unit,action,reason,expires_at\nundo-x4,pass,grant,r,${inDays(10)}\nundo-x4,cape,grant,r,${inDays(10)}\n`,
  );
  await applyUploaded(client, up.location as string);
  await change(client, "extend", "undo-x4", { expires_at: inDays(30) });
  const [afterBundle] = await extensions("undo-x4");
  await f.sql`update entitlement_audit set detail = detail - 'expires_before' where audit_id = ${afterBundle?.audit_id as string}`;
  expect(await post("undo-x4", afterBundle?.audit_id as string)).toContain("is not recorded");
  expect((await auditOf("undo-x4")).length, "nothing written: the bundle's two grants and the extension").toBe(3);
});

test("an extension right after a bundle grant keeps the expiry it replaced, and its undo restores it", async () => {
  const client = await signedIn(TOKENS.admin);
  const [first, later] = [inDays(10), inDays(30)];
  const up = await upload(
    client,
    `user_id,stock_keeping_unit,action,reason,expires_at\nundo-x6,pass,grant,r,${first}\nundo-x6,cape,grant,r,${first}\n`,
  );
  await applyUploaded(client, up.location as string);
  await change(client, "extend", "undo-x6", { expires_at: later });
  const [extension] = await f.sql<{ detail: Record<string, unknown> }[]>`
    select detail from entitlement_audit where user_id = 'undo-x6' and stock_keeping_unit = 'pass' and action = 'EXTEND'`;
  expect(extension?.detail, "the audit detail says the expiry the extension replaced").toMatchObject({
    expires_at: later,
    expires_before: first,
  });

  const undo = await undoFrom(client, "undo-x6", "pass");
  expect(undo, "the extension is offered for undo").toBeDefined();
  expect(await noticeOf(client, "undo-x6")).toContain("Undid the extension");
  const [row] = await f.sql<{ version: number; expires_at: Date }[]>`
    select version::int, expires_at from entitlements where user_id = 'undo-x6' and stock_keeping_unit = 'pass'`;
  expect(row, "the version after the grant (0) and the extension (1)").toEqual({
    version: 2,
    expires_at: new Date(first),
  });
  const [expiry] = await f.sql<{ status: string; due_at: Date }[]>`
    select status, due_at from entitlement_expiries where user_id = 'undo-x6' and stock_keeping_unit = 'pass'`;
  expect(expiry, "the expiry is due at the bundle's time again").toEqual({
    status: "PENDING",
    due_at: new Date(first),
  });
  const [cape] = await f.sql<{ version: number; expires_at: Date }[]>`
    select version::int, expires_at from entitlements where user_id = 'undo-x6' and stock_keeping_unit = 'cape'`;
  expect(cape, "the bundle's other item is untouched").toEqual({ version: 0, expires_at: new Date(first) });
});

test("the undo of an extension checks the version again under the lock: a change in between refuses it", async () => {
  const client = await signedIn(TOKENS.admin);
  const [first, later] = [inDays(10), inDays(40)];
  await change(client, "grant", "undo-x5", { expires_at: first });
  await change(client, "extend", "undo-x5", { expires_at: later });
  const deps = {
    sql: f.sql,
    now: () => new Date(),
    idempotencyTtlMs: 86_400_000,
    statementTimeoutMs: 5_000,
    metrics: createCommandMetrics(new Registry()),
  };
  const command = (key: string, version: number) => ({
    body: {
      user_id: "undo-x5",
      stock_keeping_unit: "pass",
      reason: "r",
      purchase_id: "undo:x",
      expires_at: first,
      version,
    },
    idempotencyKey: key,
    traceId: "t",
    caller: "console:lead",
  });
  const stale = await executeExtensionUndo(deps, command("stale", 0));
  expect(stale).toMatchObject({ kind: "state_conflict", status: 409 });
  expect((stale.body as { message: string }).message).toBe("the entitlement has changed since the extension");
  expect((await auditOf("undo-x5")).length, "nothing written").toBe(2);
  const current = await executeExtensionUndo(deps, command("current", 1));
  expect(current).toMatchObject({ kind: "applied", status: 200, body: { version: 2, expires_at: first } });
});

test("audit search: by user, SKU, caller, action and time, newest first, paged", async () => {
  const client = await signedIn(TOKENS.reader);
  const search = async (query: string) => {
    const page = await client.get(`/console/audit?${query}`);
    expect(page.status, page.text).toBe(200);
    const rows = [
      ...page.text.matchAll(
        /data-testid="audit-row"><td><time>([^<]+)<\/time><\/td>\s*<td><a [^>]*><bdi>([^<]*)<\/bdi><\/a><\/td>\s*<td><bdi>([^<]*)<\/bdi><\/td><td>([A-Z]+)</g,
      ),
    ];
    const next = /href="([^"]+)" data-testid="audit-next"/.exec(page.text)?.[1]?.replaceAll("&amp;", "&");
    return { rows: rows.map((m) => [m[2], m[3], m[4]]), times: rows.map((m) => m[1] as string), next };
  };
  const all = await search("");
  expect(all.rows.length).toBeGreaterThanOrEqual(5);
  expect([...all.times].sort().reverse(), "newest first").toEqual(all.times);
  const ofUser = (await search("user_id=s-u1")).rows;
  expect(ofUser.map((r) => r.join(" ")).sort()).toEqual(["s-u1 shield GRANT", "s-u1 sword GRANT"]);
  expect((await search("sku=cape&action=revoke")).rows).toEqual([["undo-u1", "cape", "REVOKE"]]);
  expect((await search("caller=console%3Alead&sku=sword")).rows.length).toBe(2);
  expect((await search("to=2000-01-01T00:00:00Z")).rows).toEqual([]);
  expect((await search(`from=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`)).rows).toEqual([]);
  expect((await client.get("/console/audit?action=DELETE")).status).toBe(400);

  // 120 changes of one user, a second apart: pages of 50 walk them newest first, each once.
  await f.sql`
    insert into entitlement_audit (audit_id, occurred_at, user_id, stock_keeping_unit, action, version, caller)
    select gen_random_uuid(), now() - make_interval(secs => i), 'page-u', 'sku-' || i, 'GRANT', 0, 'api'
    from generate_series(1, 120) i`;
  const seen: string[] = [];
  let query: string | undefined = "user_id=page-u";
  let pages = 0;
  while (query !== undefined) {
    const page = await search(query);
    seen.push(...page.rows.map((r) => r[1] as string));
    query = page.next?.split("?")[1];
    pages++;
  }
  expect(pages).toBe(3);
  expect(seen).toEqual(Array.from({ length: 120 }, (_, i) => `sku-${i + 1}`));
});
