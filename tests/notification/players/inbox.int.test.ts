// A player's inbox under /v1/me/: their own notifications only, newest first and keyset-paged, the unread filter and
// count, the summary, and marking read by ids or up to a seq, idempotently. No other player's row is ever shown or
// changed, and a request without a valid access token gets the same 401 answers as Entitlement's JWT callers.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startTestIdp, type TestIdp } from "../../support/idp.ts";
import { uniqueName, useTestDatabase } from "../../support/infra.ts";
import { notificationApp } from "../app.helpers.ts";
import { PLAYER_AUDIENCE, playerConfig, playerToken, type Replica, startReplica } from "./harness.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("player_inbox", { service: "notification" });
let idp: TestIdp;
let replica: Replica;
const alice = uniqueName("alice");
const bob = uniqueName("bob");
let aliceToken: string;

type Item = { notification_id: string; seq: number; read_at: string | null; payload: Record<string, unknown> };
type List = { items: Item[]; next_cursor: string | null; unread_count: number };

async function call(path: string, init: { token?: string; method?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {};
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${replica.url}${path}`, {
    method: init.method ?? "GET",
    headers,
    // A string is sent as it is: JSON whose numbers JavaScript cannot write.
    body: init.body === undefined || typeof init.body === "string" ? init.body : JSON.stringify(init.body),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

const list = async (query = "", token = aliceToken) =>
  (await call(`/v1/me/notifications${query}`, { token })).body as unknown as List;

beforeAll(async () => {
  idp = await startTestIdp();
  replica = await startReplica({ config: playerConfig(idp), sql: f.sql, nc: undefined });
  aliceToken = await playerToken(idp, alice);
  // Alice: 5 notifications; Bob: 3, stored in between hers.
  for (const user of [alice, bob, alice, alice, bob, alice, bob, alice]) await replica.store([user]);
});
afterAll(async () => {
  await replica?.stop();
  await idp?.close();
});

describe("who may read", () => {
  test("without an issuer configured, the /v1/me/ routes are a plain 404", async () => {
    const app = notificationApp(f.sql);
    const response = await app.handle(new Request("http://localhost/v1/me/notifications"));
    expect(response.status).toBe(404);
    expect(((await response.json()) as { code: string }).code).toBe("NOT_FOUND");
  });

  test("with the players' routes on, the probes stay open and other paths are what they were", async () => {
    expect((await fetch(`${replica.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${replica.url}/metrics`)).status).toBe(200);
    expect((await fetch(`${replica.url}/v1/nothing-here`)).status).toBe(404);
    expect((await fetch(`${replica.url}/v1/me/notifications`, { method: "DELETE" })).status).toBe(405);
  });

  test("no token, a forged one, or one for another audience: 401 with the bearer challenge", async () => {
    const none = await call("/v1/me/notifications");
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe("Bearer");
    const claims = { iss: idp.issuer, sub: alice, exp: Math.floor(Date.now() / 1000) + 60 };
    for (const token of [
      "not-a-jwt",
      await idp.forge({ ...claims, aud: "https://someone-else.test" }),
      await idp.forge({ ...claims, aud: PLAYER_AUDIENCE, exp: Math.floor(Date.now() / 1000) - 120 }),
    ]) {
      const refused = await call("/v1/me/notifications/summary", { token });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
      expect(refused.body.code).toBe("UNAUTHORIZED");
    }
  });
});

describe("the list", () => {
  test("shows the player's own notifications only, newest first, numbered 1..n", async () => {
    const page = await list();
    expect(page.items.map((i) => i.seq)).toEqual([5, 4, 3, 2, 1]);
    expect(
      page.items.every((i) => i.payload.user_id === alice),
      "never another player's row",
    ).toBe(true);
    expect(page.next_cursor).toBeNull();
    expect(page.unread_count).toBe(5);
    const bobs = await list("", await playerToken(idp, bob));
    expect(bobs.items.map((i) => i.seq)).toEqual([3, 2, 1]);
  });

  test("pages by keyset with limit and cursor", async () => {
    const first = await list("?limit=2");
    expect(first.items.map((i) => i.seq)).toEqual([5, 4]);
    const second = await list(`?limit=2&cursor=${first.next_cursor}`);
    expect(second.items.map((i) => i.seq)).toEqual([3, 2]);
    const last = await list(`?limit=2&cursor=${second.next_cursor}`);
    expect(last.items.map((i) => i.seq)).toEqual([1]);
    expect(last.next_cursor).toBeNull();
  });

  test("orders by seq as a number beyond 9", async () => {
    const player = uniqueName("twelve");
    for (let i = 0; i < 12; i++) await replica.store([player]);
    const page = await list("?limit=100", await playerToken(idp, player));
    expect(page.items.map((i) => i.seq)).toEqual([12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
  });

  test("refuses a limit outside 1..100, an unread that is not a boolean and a foreign cursor", async () => {
    for (const query of ["?limit=0", "?limit=101", "?limit=x", "?unread=yes", "?cursor=abc", "?cursor=WyJ4Il0"]) {
      const answer = await call(`/v1/me/notifications${query}`, { token: aliceToken });
      expect(answer.status, query).toBe(400);
      expect(answer.body.code).toBe("BAD_REQUEST");
    }
  });
});

describe("marking read", () => {
  test("by ids: the player's own are marked, another player's id is ignored like an unknown one", async () => {
    const [newest] = (await list()).items;
    const bobsItem = (await list("", await playerToken(idp, bob))).items[0];
    const answer = await call("/v1/me/notifications/read", {
      token: aliceToken,
      method: "POST",
      body: { notification_ids: [newest?.notification_id, bobsItem?.notification_id, crypto.randomUUID()] },
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ unread_count: 4 });
    const bobs = await list("", await playerToken(idp, bob));
    expect(bobs.unread_count, "Bob's notification was not changed by Alice").toBe(3);
    expect(bobs.items.every((i) => i.read_at === null)).toBe(true);
  });

  test("again: nothing changes, read_at included", async () => {
    const before = (await list()).items[0];
    const answer = await call("/v1/me/notifications/read", {
      token: aliceToken,
      method: "POST",
      body: { notification_ids: [before?.notification_id] },
    });
    expect(answer.body).toEqual({ unread_count: 4 });
    expect((await list()).items[0]?.read_at).toBe(before?.read_at ?? "missing");
  });

  test("unread=true lists only the unread ones, and the summary counts them", async () => {
    expect((await list("?unread=true")).items.map((i) => i.seq)).toEqual([4, 3, 2, 1]);
    const summary = await call("/v1/me/notifications/summary", { token: aliceToken });
    expect(summary.body).toEqual({ unread_count: 4, last_seq: 5 });
  });

  test("up to a seq marks every unread one up to it, the player's only", async () => {
    const answer = await call("/v1/me/notifications/read", {
      token: aliceToken,
      method: "POST",
      body: { up_to_seq: 3 },
    });
    expect(answer.body).toEqual({ unread_count: 1 });
    expect((await list("?unread=true")).items.map((i) => i.seq)).toEqual([4]);
    expect((await list("", await playerToken(idp, bob))).unread_count).toBe(3);
  });

  test("a body that is neither form, or 101 ids, is a 400", async () => {
    const ids = Array.from({ length: 101 }, () => crypto.randomUUID());
    for (const body of [{}, { notification_ids: [] }, { notification_ids: ids }, { up_to_seq: -1 }]) {
      const answer = await call("/v1/me/notifications/read", { token: aliceToken, method: "POST", body });
      expect(answer.status, JSON.stringify(body).slice(0, 40)).toBe(400);
    }
  });

  test("an up_to_seq that is not a seq (2^63 and beyond, a fraction, text): 400 naming the field and its rule", async () => {
    const rule = "up_to_seq must be an integer from 0 to 9007199254740991";
    const raw = ['{"up_to_seq": 1e20}', '{"up_to_seq": 99999999999999999999999}', '{"up_to_seq": 9223372036854775808}'];
    for (const body of [...raw, { up_to_seq: 2 ** 53 }, { up_to_seq: 1.5 }, { up_to_seq: "3" }, { up_to_seq: -1 }]) {
      const answer = await call("/v1/me/notifications/read", { token: aliceToken, method: "POST", body });
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body, JSON.stringify(body)).toEqual({ code: "BAD_REQUEST", message: rule });
    }
    const largest = await call("/v1/me/notifications/read", {
      token: await playerToken(idp, uniqueName("largest")),
      method: "POST",
      body: { up_to_seq: Number.MAX_SAFE_INTEGER },
    });
    expect(largest.body, "the largest seq a client can name is accepted").toEqual({ unread_count: 0 });
  });

  test("a bad notification_ids, neither form or both: 400 naming the field and its rule", async () => {
    const ids = Array.from({ length: 101 }, () => crypto.randomUUID());
    const cases: [unknown, string][] = [
      [{ notification_ids: [] }, "notification_ids must be an array of 1 to 100 notification ids"],
      [{ notification_ids: ids }, "notification_ids must be an array of 1 to 100 notification ids"],
      [{ notification_ids: "x" }, "notification_ids must be an array of 1 to 100 notification ids"],
      [{ notification_ids: [crypto.randomUUID(), "nope"] }, "notification_ids[1] must be a notification id (a UUID)"],
      [{ notification_ids: [7] }, "notification_ids[0] must be a notification id (a UUID)"],
      [{}, "the body must have notification_ids or up_to_seq"],
      [[3], "the body must have notification_ids or up_to_seq"],
      [
        { notification_ids: [crypto.randomUUID()], up_to_seq: 3 },
        "the body must have notification_ids or up_to_seq, not both",
      ],
    ];
    for (const [body, message] of cases) {
      const answer = await call("/v1/me/notifications/read", { token: aliceToken, method: "POST", body });
      expect(answer.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      expect(answer.body.message as string, JSON.stringify(body).slice(0, 60)).toStartWith(message);
    }
  });

  test("the token is checked before the body: a bad body without a token is a 401", async () => {
    const answer = await call("/v1/me/notifications/read", { method: "POST", body: { up_to_seq: 1e20 } });
    expect(answer.status).toBe(401);
  });

  test("a body that is not JSON is refused with a 4xx and the error envelope, never a 5xx", async () => {
    const response = await fetch(`${replica.url}/v1/me/notifications/read`, {
      method: "POST",
      headers: { authorization: `Bearer ${aliceToken}`, "content-type": "text/plain" },
      body: "up_to_seq=3",
    });
    expect([400, 415]).toContain(response.status);
    expect(((await response.json()) as { code: string }).code).toMatch(/^(BAD_REQUEST|UNSUPPORTED_MEDIA_TYPE)$/);
  });

  test("a player without notifications has an empty inbox and a summary of zeros", async () => {
    const token = await playerToken(idp, uniqueName("nobody"));
    expect((await call("/v1/me/notifications/summary", { token })).body).toEqual({ unread_count: 0, last_seq: 0 });
    expect(await list("", token)).toEqual({ items: [], next_cursor: null, unread_count: 0 });
  });
});
