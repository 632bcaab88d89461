// The HTTP edge as a careless or hostile client meets it, through a listening server (Bun's own request parsing, not
// only `app.handle`): requests without a usable Host, ids with control characters, path segments that are not
// well-formed UTF-8 percent-encoding. Each case was a 500, or a 200 that committed an unpublishable event.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { rawGet } from "../support/raw-http.ts";
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
  const cases = ["\n", "\r", "\u0000", "\u0001", "\t", "\u001b[31m", "\u007f"].flatMap((ch) =>
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
