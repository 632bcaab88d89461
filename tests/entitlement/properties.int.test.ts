// Properties of the Entitlement API on a real database. (1) Whatever arrives (any method, path, headers,
// body), the answer is never a 5xx and every error is the `{code, message}` envelope as application/json. (2) Random
// sequences of grants, revokes, replays and reused keys agree with a small model of the state machine (versions from
// 0, "already ACTIVE/REVOKED" conflicts) and of the idempotency rules (same key and request → the stored answer, byte
// for byte; same key, other request → 409 IDEMPOTENCY_KEY_CONFLICT).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { createApp } from "../../src/entitlement/app.ts";
import { ensureEntitlementStream } from "../../src/entitlement/work/outbox/stream.ts";
import { parseTokenEntries, tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { natsUrl, uniqueName } from "../support/infra.ts";
import { type ApiFixture, type App, commandRequest, openApi, send } from "./api.helpers.ts";
import { makeRelay } from "./outbox.helpers.ts";
import * as arb from "./properties.arbitraries.ts";

let f: ApiFixture;
let guarded: App;
const TOKEN = "ent_property_test_token_0123456789";
beforeAll(async () => {
  f = await openApi("ent_props");
  const tokens = parseTokenEntries(tokenEntryLine("props", TOKEN, "read+write")).entries;
  guarded = createApp({
    sql: f.sql,
    log: silentLogger,
    now: () => new Date(),
    idempotencyTtlHours: 24,
    auth: { disabled: false, tokens, metricsPublic: false },
  });
});
let nc: NatsConnection | undefined;
afterAll(async () => {
  await nc?.close();
  await f.close();
});

function buildRequest(input: {
  method: string;
  path: string;
  headers: Record<string, string | undefined>;
  body: string | Uint8Array | undefined;
}): Request | undefined {
  const headers = new Headers();
  try {
    for (const [name, value] of Object.entries(input.headers)) if (value !== undefined) headers.append(name, value);
    const withBody = input.method !== "GET" && input.method !== "HEAD";
    return new Request(`http://localhost${input.path}`, {
      method: input.method,
      headers,
      body: withBody ? input.body : undefined,
    });
  } catch {
    return undefined; // not a request any HTTP client could send (the Fetch API refuses it)
  }
}

describe("hostile input", () => {
  const request = fc.record({ method: arb.method, path: arb.path, headers: arb.headers, body: arb.body });

  for (const [name, app] of [
    ["authentication disabled", () => f.app],
    ["bearer tokens", () => guarded],
  ] as const) {
    test(`never answers 5xx and always with the envelope (${name})`, async () => {
      await fc.assert(
        fc.asyncProperty(request, fc.boolean(), async (input, authorized) => {
          if (authorized) input.headers.authorization = `Bearer ${TOKEN}`;
          const req = buildRequest(input);
          fc.pre(req !== undefined);
          const reply = await send(app(), req as Request);
          expect(reply.status, `no input makes a 5xx: ${reply.text}`).toBeLessThan(500);
          if (reply.status >= 400 && input.method !== "HEAD") {
            expect(reply.contentType ?? "", "errors are JSON").toStartWith("application/json");
            expect(Object.keys(reply.json).sort(), `the envelope, nothing else: ${reply.text}`).toEqual([
              "code",
              "message",
            ]);
            expect(typeof reply.json.code === "string" && typeof reply.json.message === "string").toBe(true);
          }
        }),
        { numRuns: 400 },
      );
    }, 60_000);
  }
});

const VALID_BODY = { user_id: "u-once", stock_keeping_unit: "sku-once", reason: "purchase", purchase_id: "p-1" };

describe("one request, one meaning", () => {
  test("a body with a repeated key, or a key sent twice (joined with a comma), is 400 and commits nothing", async () => {
    const committed = async () => (await f.sql`select count(*)::int as n from idempotency_keys`)[0]?.n as number;
    const before = await committed();
    await fc.assert(
      fc.asyncProperty(arb.duplicateKeys, fc.uuid(), fc.boolean(), async (text, key, twoKeys) => {
        fc.pre(Buffer.byteLength(text) <= 16 * 1024); // a larger body is 413 before it is parsed
        const headers = { "idempotency-key": twoKeys ? `${key}, ${key}` : key };
        const reply = await send(f.app, commandRequest("grants", twoKeys ? JSON.stringify(VALID_BODY) : text, headers));
        expect(reply.status, reply.text).toBe(400);
        expect(reply.json.code).toBe("BAD_REQUEST");
      }),
      { numRuns: 200 },
    );
    expect(await committed(), "nothing was stored").toBe(before);
  });
});

type Status = "ACTIVE" | "REVOKED";
type Step = { replay: boolean; action: "grants" | "revokes"; user: number; sku: number; reason: number; key: number };
type Stored = { request: string; status: number; text: string };

/** A small domain, so that pairs are toggled, keys are reused and requests repeat often. */
const step = fc.record({
  replay: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
  action: fc.constantFrom("grants" as const, "revokes" as const),
  user: fc.integer({ min: 0, max: 1 }),
  sku: fc.integer({ min: 0, max: 1 }),
  reason: fc.integer({ min: 0, max: 1 }),
  key: fc.integer({ min: 0, max: 7 }),
});

let runs = 0;

type Model = { pairs: Map<string, { status: Status; version: number }>; keys: Map<string, Stored> };
type Sent = { key: string; action: Step["action"]; body: Record<string, string> };

/** What the model says one request must get; updates the model as the service must update itself. */
function expected(model: Model, { key, action, body }: Sent) {
  const request = JSON.stringify([action, body]);
  const stored = model.keys.get(key);
  if (stored)
    return stored.request === request ? { replayOf: stored } : { status: 409, code: "IDEMPOTENCY_KEY_CONFLICT" };
  const pair = `${body.user_id}/${body.stock_keeping_unit}`;
  const target: Status = action === "grants" ? "ACTIVE" : "REVOKED";
  const current = model.pairs.get(pair);
  if (current?.status === target)
    return { status: 409, code: "ENTITLEMENT_STATE_CONFLICT", message: `already ${target}`, store: request };
  const version = current ? current.version + 1 : 0;
  model.pairs.set(pair, { status: target, version });
  return { status: 200, entitlement: { status: target, version }, store: request };
}

async function sendAndCheck(model: Model, next: Sent): Promise<void> {
  const want = expected(model, next);
  const reply = await send(f.app, commandRequest(next.action, next.body, { "idempotency-key": next.key }));
  const what = `${next.action} ${JSON.stringify(next.body)} key ${next.key}: ${reply.status} ${reply.text}`;
  if ("replayOf" in want && want.replayOf) {
    expect(`${reply.status} ${reply.text}`, `same key and request: the stored answer, byte for byte (${what})`).toBe(
      `${want.replayOf.status} ${want.replayOf.text}`,
    );
    return;
  }
  expect(reply.status, what).toBe(want.status as number);
  if (want.code) expect(reply.json.code, what).toBe(want.code);
  if (want.message) expect(reply.json.message, what).toBe(want.message);
  if (want.entitlement) expect(reply.json, what).toMatchObject(want.entitlement);
  if (want.store) model.keys.set(next.key, { request: want.store, status: reply.status, text: reply.text });
}

async function checkListed(model: Model, user: string): Promise<void> {
  const listed = await send(f.app, new Request(`http://localhost/v1/users/${user}/entitlements`));
  const rows = (listed.json.entitlements as { stock_keeping_unit: string; status: string; version: number }[]) ?? [];
  const actual = Object.fromEntries(rows.map((r) => [r.stock_keeping_unit, `${r.status} v${r.version}`]));
  const wanted = Object.fromEntries(
    [...model.pairs]
      .filter(([pair]) => pair.startsWith(`${user}/`))
      .map(([pair, v]) => [pair.split("/")[1], `${v.status} v${v.version}`]),
  );
  expect(actual, `the list shows the model's state of every pair of ${user}`).toEqual(wanted);
}

describe("model of the state machine and the idempotency rules", () => {
  test("random grants, revokes, replays and reused keys agree with the model", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
        // Fresh users and keys per run, so runs (and shrinking) never see each other's rows.
        const run = `m${++runs}-${Math.random().toString(36).slice(2, 8)}`;
        const model: Model = { pairs: new Map(), keys: new Map() };
        let previous: Sent | undefined;
        for (const s of steps) {
          const body = {
            user_id: `${run}-u${s.user}`,
            stock_keeping_unit: `sku-${s.sku}`,
            reason: `r${s.reason}`,
            purchase_id: "p-1",
          };
          const next = s.replay && previous ? previous : { key: `${run}-k${s.key}`, action: s.action, body };
          previous = next;
          await sendAndCheck(model, next);
        }
        for (const user of [0, 1]) await checkListed(model, `${run}-u${user}`);
      }),
      { numRuns: 40 },
    );
  }, 60_000);
});

describe("every committed change reaches PUBLISHED", () => {
  test("arbitrary text in every field: never a 5xx, and the relay publishes every change committed", async () => {
    let committed = 0;
    await fc.assert(
      fc.asyncProperty(arb.looseCommand, async ({ action, body }) => {
        const key = { "idempotency-key": crypto.randomUUID() };
        const reply = await send(f.app, commandRequest(action, body, key));
        expect(reply.status, `no input makes a 5xx: ${JSON.stringify(body)} → ${reply.text}`).toBeLessThan(500);
        if (reply.status === 200) committed++;
      }),
      { numRuns: 300 },
    );
    expect(committed, "the property exercised commits, not only refusals").toBeGreaterThan(0);

    // Everything this file committed, hostile input included, must now publish: nothing may end FAILED.
    nc = await connect({ servers: await natsUrl() });
    const stream = uniqueName("ev_props").replaceAll(".", "_");
    const subject = `${stream}.events`;
    const jsm = await jetstreamManager(nc);
    await ensureEntitlementStream(jsm, { stream, subject, duplicateWindowMs: 120_000, replicas: 1 });
    try {
      const relay = makeRelay({ sql: f.sql, js: jetstream(nc), subject } as Parameters<typeof makeRelay>[0]);
      for (let round = 0; round < 200; round++) {
        const report = await relay.runOnce();
        if (report.claimed === 0) break;
      }
      const rows = await f.sql<{ status: string; n: number }[]>`
        select status, count(*)::int as n from outbox_events group by status`;
      const byStatus = Object.fromEntries(rows.map((r) => [r.status, r.n]));
      expect(Object.keys(byStatus), `every committed change is PUBLISHED: ${JSON.stringify(byStatus)}`).toEqual([
        "PUBLISHED",
      ]);
      expect((await jsm.streams.info(stream)).state.messages, "one message per change").toBe(byStatus.PUBLISHED ?? -1);
    } finally {
      await jsm.streams.delete(stream).catch(() => false);
    }
  }, 120_000);
});
