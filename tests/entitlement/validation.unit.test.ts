// Every bad request is answered at the edge, before any database work: the app here has a database handle that
// points nowhere, so a request that reached the database would fail with 503 instead of the expected status.
import { afterAll, describe, expect, test } from "bun:test";
import { createApp } from "../../src/entitlement/app.ts";
import { createSql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { AUTH_DISABLED, commandRequest, type Reply, send, vectorBody } from "./api.helpers.ts";

const sql = createSql({
  url: "postgres://postgres@127.0.0.1:9/unused",
  schema: "entitlement",
  max: 1,
  applicationName: "t",
});
const app = createApp({ sql, log: silentLogger, now: () => new Date(), idempotencyTtlHours: 24, auth: AUTH_DISABLED });
afterAll(() => sql.end({ timeout: 1 }));

const KEY = { "idempotency-key": "idem-1" };

function expectError(reply: Reply, status: number, code: string, message?: string) {
  expect(reply.status, `status for ${code}`).toBe(status);
  expect(reply.contentType, "every error is application/json").toStartWith("application/json");
  expect(Object.keys(reply.json), "every error body is exactly {code, message}").toEqual(["code", "message"]);
  expect(reply.json.code).toBe(code);
  if (message !== undefined) expect(reply.json.message).toBe(message);
}

describe("Idempotency-Key is checked before the body", () => {
  test("a missing key is 400 even when the body is also bad", async () => {
    expectError(
      await send(app, commandRequest("grants", vectorBody)),
      400,
      "BAD_REQUEST",
      "Idempotency-Key is required",
    );
    expectError(await send(app, commandRequest("grants", "{")), 400, "BAD_REQUEST", "Idempotency-Key is required");
    const wrongType = commandRequest("grants", "x", { "content-type": "text/plain" });
    expectError(await send(app, wrongType), 400, "BAD_REQUEST", "Idempotency-Key is required");
  });

  test("a blank key is 400 even when the body is also bad", async () => {
    const reply = await send(app, commandRequest("revokes", "{}", { "idempotency-key": "   " }));
    expectError(reply, 400, "BAD_REQUEST", "Idempotency-Key is required");
  });

  test("a key over 255 characters or with non-printable characters is 400", async () => {
    const long = await send(app, commandRequest("grants", vectorBody, { "idempotency-key": "k".repeat(256) }));
    expectError(long, 400, "BAD_REQUEST", "Idempotency-Key must be at most 255 characters");
    const tab = await send(app, commandRequest("grants", vectorBody, { "idempotency-key": "a\tb" }));
    expectError(tab, 400, "BAD_REQUEST", "Idempotency-Key must be printable ASCII");
  });
});

describe("media type and size", () => {
  test.each(["text/plain", "application/x-www-form-urlencoded", "application/xml", "application/jsonx"])(
    "Content-Type %s is 415",
    async (type) => {
      const reply = await send(app, commandRequest("grants", vectorBody, { ...KEY, "content-type": type }));
      expectError(reply, 415, "UNSUPPORTED_MEDIA_TYPE");
    },
  );

  test("a body without Content-Type is 415; no body and no Content-Type is 'request body is required'", async () => {
    const noType = new Request("http://localhost/v1/entitlements/grants", {
      method: "POST",
      headers: KEY,
      body: new Blob([JSON.stringify(vectorBody)]),
    });
    expectError(await send(app, noType), 415, "UNSUPPORTED_MEDIA_TYPE");
    const empty = new Request("http://localhost/v1/entitlements/grants", { method: "POST", headers: KEY });
    expectError(await send(app, empty), 400, "BAD_REQUEST", "request body is required");
  });

  test("a body over 16 KiB is 413, by Content-Length and by the bytes actually sent", async () => {
    const big = JSON.stringify({ ...vectorBody, padding: "x".repeat(16 * 1024) });
    expectError(await send(app, commandRequest("grants", big, KEY)), 413, "PAYLOAD_TOO_LARGE");
    const chunks = [new TextEncoder().encode(big.slice(0, 9000)), new TextEncoder().encode(big.slice(9000))];
    const streamed = new Request("http://localhost/v1/entitlements/grants", {
      method: "POST",
      headers: { ...KEY, "content-type": "application/json" },
      body: new ReadableStream({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk);
          controller.close();
        },
      }),
    });
    expect(streamed.headers.get("content-length"), "the streamed request declares no length").toBeNull();
    expectError(await send(app, streamed), 413, "PAYLOAD_TOO_LARGE");
  });
});

describe("body and fields", () => {
  test.each([
    ["empty", "", "request body is required"],
    ["literal null", "null", "request body is required"],
    ["malformed", '{"user_id":', "request body is invalid"],
    ["whitespace", "   ", "request body is invalid"],
    ["an array", "[]", "request body is invalid"],
    ["a string", '"x"', "request body is invalid"],
    ["trailing content", `${JSON.stringify(vectorBody)} x`, "request body is invalid"],
  ])("%s body → 400 %s", async (_, body, message) => {
    expectError(await send(app, commandRequest("grants", body, KEY)), 400, "BAD_REQUEST", message);
  });

  test("bytes that are not UTF-8 are 'request body is invalid'", async () => {
    const request = new Request("http://localhost/v1/entitlements/grants", {
      method: "POST",
      headers: { ...KEY, "content-type": "application/json" },
      body: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
    });
    expectError(await send(app, request), 400, "BAD_REQUEST", "request body is invalid");
  });

  test.each([
    ["user_id", "", "user_id is required"],
    ["user_id", " \t\n", "user_id is required"],
    ["user_id", null, "user_id is required"],
    ["stock_keeping_unit", "   ", "stock_keeping_unit is required"],
    ["reason", "", "reason is required"],
    ["purchase_id", "", "purchase_id is required"],
    ["user_id", "u".repeat(129), "user_id must be at most 128 characters"],
    ["stock_keeping_unit", "s".repeat(129), "stock_keeping_unit must be at most 128 characters"],
    ["reason", "r".repeat(65), "reason must be at most 64 characters"],
    ["purchase_id", "p".repeat(129), "purchase_id must be at most 128 characters"],
    ["user_id", 123, "user_id must be a string"],
    ["reason", ["purchase"], "reason must be a string"],
    ["purchase_id", "p\u0000", "purchase_id must not contain control characters"],
    ["user_id", "u\n1", "user_id must not contain control characters"],
    ["stock_keeping_unit", "s\r", "stock_keeping_unit must not contain control characters"],
    ["user_id", "\ud800", "user_id must be well-formed Unicode (no lone surrogate)"],
    ["reason", "a\udc00b", "reason must be well-formed Unicode (no lone surrogate)"],
  ])("%s = %j → 400 %s", async (field, value, message) => {
    const reply = await send(app, commandRequest("grants", { ...vectorBody, [field]: value }, KEY));
    expectError(reply, 400, "BAD_REQUEST", message);
  });

  test("a missing field is required; the first bad field in schema order is reported", async () => {
    const { reason: _, ...noReason } = vectorBody;
    expectError(await send(app, commandRequest("revokes", noReason, KEY)), 400, "BAD_REQUEST", "reason is required");
    expectError(await send(app, commandRequest("grants", {}, KEY)), 400, "BAD_REQUEST", "user_id is required");
    const twoBad = { ...vectorBody, stock_keeping_unit: "", purchase_id: "" };
    expectError(
      await send(app, commandRequest("grants", twoBad, KEY)),
      400,
      "BAD_REQUEST",
      "stock_keeping_unit is required",
    );
  });
});

describe("list route input", () => {
  test("a blank or over-long user_id is 400", async () => {
    const blank = await send(app, new Request("http://localhost/v1/users/%20%20/entitlements"));
    expectError(blank, 400, "BAD_REQUEST", "user_id is required");
    const long = await send(app, new Request(`http://localhost/v1/users/${"u".repeat(129)}/entitlements`));
    expectError(long, 400, "BAD_REQUEST", "user_id must be at most 128 characters");
  });
});

describe("routing errors use the envelope too", () => {
  test("unknown paths, and an empty user_id segment, are 404", async () => {
    expectError(await send(app, new Request("http://localhost/v1/nothing")), 404, "NOT_FOUND");
    expectError(await send(app, new Request("http://localhost/v1/users//entitlements")), 404, "NOT_FOUND");
  });

  test("a wrong method is 405 with Allow", async () => {
    const response = await app.handle(new Request("http://localhost/v1/entitlements/grants"));
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("POST");
    expectError(
      await send(app, new Request("http://localhost/v1/entitlements/revokes", { method: "PUT" })),
      405,
      "METHOD_NOT_ALLOWED",
    );
    expectError(
      await send(app, new Request("http://localhost/v1/users/u/entitlements", { method: "DELETE" })),
      405,
      "METHOD_NOT_ALLOWED",
    );
  });
});
