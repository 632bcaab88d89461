// The HTTP edge as a careless or hostile client meets it, through a listening server (Bun's own request parsing, not
// only `app.handle`): requests without a usable Host, ids with control characters, path segments that are not
// well-formed UTF-8 percent-encoding. Each case was a 500, or a 200 that committed an unpublishable event.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { rawGet, rawRequest } from "../support/raw-http.ts";
import { type ApiFixture, commandRequest, countRows, openApi, send, vectorBody } from "./api.helpers.ts";

setDefaultTimeout(30_000);

let f: ApiFixture;
let port: number;
let stop: () => void;
beforeAll(async () => {
  f = await openApi("ent_edge");
  const server = f.app.listen({ hostname: "127.0.0.1", port: 0 });
  port = server.server?.port ?? 0;
  stop = () => void server.stop(true);
});
afterAll(async () => {
  stop();
  await f.close();
});

describe("a request without a usable Host header is answered like any other", () => {
  test.each([
    ["HTTP/1.0 without Host", [], "1.0"],
    ["HTTP/1.1 with an empty Host", ["Host: "], "1.1"],
    ["a Host with a space", ["Host: a b"], "1.1"],
    ["a Host that is not a URL authority", ["Host: [::"], "1.1"],
  ] as const)("%s", async (_, lines, version) => {
    const health = await rawGet(port, "/healthz", [...lines], version);
    expect(health.status, `liveness never fails on framing: ${health.body}`).toBe(200);
    expect(JSON.parse(health.body)).toMatchObject({ status: "UP" });
    expect((await rawGet(port, "/readyz", [...lines], version)).status).toBe(200);
    const list = await rawGet(port, "/v1/users/u-host/entitlements", [...lines], version);
    expect(list.status, list.body).toBe(200);
    expect((await rawGet(port, "/v1/users/%ZZ/entitlements", [...lines], version)).status).toBe(400);
  });
});

describe("path parameters are decoded strictly", () => {
  test.each([
    ["%ZZ", "user_id must be well-formed UTF-8 percent-encoding"],
    ["a%ZZb", "user_id must be well-formed UTF-8 percent-encoding"],
    ["%", "user_id must be well-formed UTF-8 percent-encoding"],
    ["%FF", "user_id must be well-formed UTF-8 percent-encoding"],
    ["%C0%80", "user_id must be well-formed UTF-8 percent-encoding"],
    ["%ED%A0%80", "user_id must be well-formed UTF-8 percent-encoding"],
    ["%00", "user_id must not contain control characters"],
    ["a%0Ab", "user_id must not contain control characters"],
    ["a%0Db", "user_id must not contain control characters"],
    ["a%1Bb", "user_id must not contain control characters"],
    ["a%7Fb", "user_id must not contain control characters"],
  ])("%s → 400 %s (server and app.handle alike)", async (segment, message) => {
    const served = await rawGet(port, `/v1/users/${segment}/entitlements`);
    expect(served.status, `never a replacement character, never another user's list: ${served.body}`).toBe(400);
    expect(JSON.parse(served.body)).toEqual({ code: "BAD_REQUEST", message });
    const handled = await send(f.app, new Request(`http://localhost/v1/users/${segment}/entitlements`));
    expect(handled.json).toEqual({ code: "BAD_REQUEST", message });
  });

  test("well-formed escapes name the user byte for byte: NFC and NFD spellings are two users", async () => {
    const nfc = "caf\u00e9-edge";
    const nfd = "cafe\u0301-edge";
    const body = { ...vectorBody, user_id: nfc };
    expect((await send(f.app, commandRequest("grants", body, { "idempotency-key": "nfc-1" }))).status).toBe(200);
    const same = await rawGet(port, `/v1/users/${encodeURIComponent(nfc)}/entitlements`);
    expect(JSON.parse(same.body).entitlements).toHaveLength(1);
    const other = await rawGet(port, `/v1/users/${encodeURIComponent(nfd)}/entitlements`);
    expect(JSON.parse(other.body), "ids are compared as given, without normalisation").toMatchObject({
      user_id: nfd,
      entitlements: [],
    });
  });
});

describe("control characters in ids are refused before anything is committed", () => {
  const cases = ["\n", "\r", "\u0000", "\u0001", "\t", "\u001b[31m", "\u007f", "\u0085", "\u009b"].flatMap((ch) =>
    (["user_id", "stock_keeping_unit", "purchase_id", "reason"] as const).map((field) => [field, ch] as const),
  );
  test.each(cases)("%s with %j → 400", async (field, ch) => {
    const before = await countRows(f.sql);
    const body = { ...vectorBody, [field]: `a${ch}b` };
    const reply = await send(
      f.app,
      commandRequest("grants", body, { "idempotency-key": `ctl-${crypto.randomUUID()}` }),
    );
    expect(reply.status, `a control character is never accepted: ${reply.text}`).toBe(400);
    expect(reply.json).toEqual({ code: "BAD_REQUEST", message: `${field} must not contain control characters` });
    expect(await countRows(f.sql), "nothing committed").toEqual(before);
  });
});

/** A POST written byte for byte, with the given extra header lines. */
const rawPost = (path: string, body: string, lines: string[], close = true) =>
  `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${lines.map((l) => `${l}\r\n`).join("")}` +
  `Content-Length: ${Buffer.byteLength(body)}\r\n${close ? "Connection: close\r\n" : ""}\r\n${body}`;

describe("one request means one thing to every reader", () => {
  test("two Idempotency-Key headers (joined into one value by the server) are refused, nothing committed", async () => {
    const before = await countRows(f.sql);
    const body = JSON.stringify({ ...vectorBody, user_id: "u-two-keys" });
    const reply = await rawRequest(
      port,
      rawPost("/v1/entitlements/grants", body, ["Idempotency-Key: first", "Idempotency-Key: second"]),
    );
    expect(reply.status, reply.body).toBe(400);
    expect(JSON.parse(reply.body)).toMatchObject({ code: "BAD_REQUEST" });
    expect(JSON.parse(reply.body).message).toContain("Idempotency-Key must be sent once");
    expect(await countRows(f.sql), "nothing committed").toEqual(before);
  });

  test.each([
    [
      "/v1/entitlements/grants",
      `{"user_id":"u-dup","user_id":"u-other","stock_keeping_unit":"s","reason":"r","purchase_id":"p"}`,
    ],
    [
      "/v1/entitlements/grants",
      `{"user_id":"u-dup","stock_keeping_unit":"s","reason":"r","purchase_id":"p","\u0072eason":"x"}`,
    ],
    [
      "/v1/entitlements/bundle-grants",
      `{"user_id":"u-dup","stock_keeping_units":["a"],"reason":"r","purchase_id":"p","purchase_id":"q"}`,
    ],
    [
      "/v1/points/reservations",
      `{"user_id":"u-dup","point_amount":1,"point_amount":1000000,"execute_at":"2026-01-01T00:00:00Z"}`,
    ],
  ])("a JSON body with a repeated key is 400 (%s)", async (path, body) => {
    const before = await countRows(f.sql);
    const reply = await send(
      f.app,
      new Request(`http://localhost${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": `dup-${crypto.randomUUID()}` },
        body,
      }),
    );
    expect(reply.json).toEqual({
      code: "BAD_REQUEST",
      message: "request body is invalid: a key appears twice in one object",
    });
    expect(await countRows(f.sql), "nothing committed").toEqual(before);
  });

  test("the same key in two objects, or in an array of objects, is no repetition", async () => {
    const body = JSON.stringify({ ...vectorBody, user_id: "u-nested", extra: [{ a: 1 }, { a: 2 }], more: { a: 3 } });
    const reply = await send(
      f.app,
      commandRequest("grants", body, { "idempotency-key": `nested-${crypto.randomUUID()}` }),
    );
    expect(reply.status, reply.text).toBe(200);
  });
});

describe("pipelined HTTP/1.1 requests", () => {
  // Bun 1.4.4 answers the first of several requests pipelined on one connection after an asynchronous handler and may
  // drop the rest (docs/failure-modes.md). The first command commits; a client that retries what went unanswered with
  // the same Idempotency-Key gets the stored reply of what committed, and one commit per key whatever happened.
  test("whatever the server answered, retrying each request with its key commits each exactly once", async () => {
    const bodies = [1, 2, 3].map((n) =>
      JSON.stringify({ ...vectorBody, user_id: "u-pipelined", stock_keeping_unit: `s-${n}` }),
    );
    const keys = bodies.map(() => `pipe-${crypto.randomUUID()}`);
    const pipelined = bodies
      .map((body, i) =>
        rawPost("/v1/entitlements/grants", body, [`Idempotency-Key: ${keys[i]}`], i === bodies.length - 1),
      )
      .join("");
    const first = await rawRequest(port, pipelined).catch(() => undefined);
    expect(first?.status ?? 200, "the first request is answered or the connection dropped, never a 5xx").toBeLessThan(
      500,
    );
    const retries = await Promise.all(
      bodies.map((body, i) => send(f.app, commandRequest("grants", body, { "idempotency-key": keys[i] as string }))),
    );
    for (const retry of retries) expect(retry.status, retry.text).toBe(200);
    const again = await send(
      f.app,
      commandRequest("grants", bodies[0] as string, { "idempotency-key": keys[0] as string }),
    );
    expect(again.text, "a second retry replays the stored reply byte for byte").toBe(retries[0]?.text ?? "");
    const rows = await f.sql`
      select stock_keeping_unit, count(*)::int as audits from entitlement_audit
      where user_id = 'u-pipelined' group by stock_keeping_unit order by 1`;
    expect(
      rows.map((r) => [r.stock_keeping_unit, r.audits]),
      "one commit per key",
    ).toEqual([
      ["s-1", 1],
      ["s-2", 1],
      ["s-3", 1],
    ]);
  });
});
