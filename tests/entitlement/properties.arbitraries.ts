// fast-check generators of hostile HTTP requests for the Entitlement API: any method and path, wrong types, huge and
// unicode strings, control characters, duplicate JSON keys, random content types and random Idempotency-Key bytes.
import fc from "fast-check";

const VALID = { user_id: "u-prop", stock_keeping_unit: "sku-prop", reason: "purchase", purchase_id: "p-1" };
const FIELDS = Object.keys(VALID) as (keyof typeof VALID)[];

/** Latin-1 text, the only thing a header value can hold; CR, LF and NUL are refused by `Headers` itself. */
const headerBytes = (maxLength: number) =>
  fc
    .array(fc.integer({ min: 1, max: 255 }), { maxLength })
    .map((codes) => String.fromCharCode(...codes.filter((c) => c !== 10 && c !== 13)));

const controlText = fc
  .array(fc.integer({ min: 0, max: 31 }), { minLength: 1, maxLength: 8 })
  .map((codes) => String.fromCharCode(...codes));

/** A value for one body field: mostly strings that break a rule, sometimes another JSON type. */
const fieldValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  controlText,
  fc.constantFrom("", " ", "\u0000", "\u00a0", "\ud800", "a\u0000b", "\u202e", "😀".repeat(70), "a\u0085b", "\u009b"),
  fc.integer({ min: 129, max: 20_000 }).map((n) => "x".repeat(n)),
  fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(fc.string()), fc.object()),
);

/** Expiries, most of them naming no instant PostgreSQL can store: February 30th, year 0000, an offset past ±15:59. */
const expiresAt = fc.oneof(
  fc.constantFrom(
    "2027-02-30T00:00:00+01:00",
    "0000-01-01T00:00:00Z",
    "0001-01-01T00:00:00+01:00",
    "2027-01-01T00:00:00+18:00",
    "2027-01-01T24:00:00Z",
    "9999-12-31T23:59:59-15:59",
    "2030-01-01T00:00:00Z",
  ),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
);

const bodyObject = fc
  .record({
    drop: fc.subarray(FIELDS),
    change: fc.dictionary(fc.constantFrom(...FIELDS), fieldValue),
    expires: fc.option(expiresAt, { nil: undefined }),
  })
  .map(({ drop, change, expires }) => {
    const body: Record<string, unknown> = { ...VALID, ...change };
    for (const name of drop) delete body[name];
    if (expires !== undefined) body.expires_at = expires;
    return body;
  });

/** JSON text with a repeated key, which JSON.parse resolves to the last one. */
export const duplicateKeys = fc
  .tuple(fc.constantFrom(...FIELDS), fieldValue)
  .map(
    ([name, value]) =>
      `${JSON.stringify(VALID).slice(0, -1)},${JSON.stringify(name)}:${JSON.stringify(value ?? null)}}`,
  );

export const body: fc.Arbitrary<string | Uint8Array | undefined> = fc.oneof(
  { arbitrary: bodyObject.map((b) => JSON.stringify(b)), weight: 5 },
  duplicateKeys,
  fc.json(),
  fc.string({ unit: "grapheme", maxLength: 200 }),
  fc.uint8Array({ maxLength: 300 }),
  fc.integer({ min: 16 * 1024 - 64, max: 70 * 1024 }).map((n) => `{"user_id":"${"y".repeat(n)}"}`),
  fc.constant(undefined),
);

export const contentType = fc.option(
  fc.oneof(
    { arbitrary: fc.constant("application/json"), weight: 4 },
    fc.constantFrom(
      "application/json",
      "application/json; charset=utf-8",
      "APPLICATION/JSON",
      "application/vnd.api+json",
      "application/problem+json",
      "text/plain",
      "text/json",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/octet-stream",
      "",
      ";",
      "application/json/extra",
    ),
    headerBytes(60),
  ),
  { nil: undefined },
);

export const path = fc.oneof(
  { arbitrary: fc.constantFrom("/v1/entitlements/grants", "/v1/entitlements/revokes"), weight: 4 },
  fc.constantFrom(
    "/v1/entitlements/grants",
    "/v1/entitlements/revokes",
    "/v1/entitlements/grants/",
    "/v1/users/u-prop/entitlements",
    "/v1/users/%00/entitlements",
    "/v1/users/%E2%82%AC/entitlements",
    "/v1/users/%ED%A0%80/entitlements",
    "/v1/users/%FF/entitlements",
    "/v1/users/a%2Fb/entitlements",
    `/v1/users/${"z".repeat(300)}/entitlements`,
    "/healthz",
    "/metrics",
    "/openapi.json",
    "/",
  ),
  fc.webPath(),
  fc.string({ unit: "grapheme", maxLength: 30 }).map((s) => `/v1/users/${encodeURIComponent(s)}/entitlements`),
  // Raw escapes, well-formed or not (%ZZ, %FF, an encoded surrogate, a lone %), and encoded control characters.
  fc
    .array(
      fc.oneof(
        fc.constantFrom("%", "%Z", "%ZZ", "%FF", "%C0%80", "%ED%A0%80", "%E2%82", "%0A", "%0D", "%00", "%1B", "%7F"),
        fc.integer({ min: 0, max: 255 }).map((b) => `%${b.toString(16).padStart(2, "0")}`),
        fc.string({ unit: "grapheme-ascii", maxLength: 4 }).map(encodeURIComponent),
      ),
      { minLength: 1, maxLength: 6 },
    )
    .map((parts) => `/v1/users/${parts.join("")}/entitlements${parts.length % 2 ? "?limit=5" : ""}`),
  fc
    .tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 40 }))
    .map(([limit, cursor]) => `/v1/users/u-prop/entitlements?limit=${encodeURIComponent(limit)}&cursor=${cursor}`),
  // Cursors that decode but name a day that does not exist or a year PostgreSQL cannot store.
  fc
    .tuple(
      fc.constantFrom("0000-01-01T00:00:00.000000Z", "2026-02-30T00:00:00.000000Z", "2026-13-01T00:00:00.000Z"),
      fc.boolean(),
    )
    .map(([at, points]) => {
      const cursor = Buffer.from(
        JSON.stringify([at, points ? "a4da5b4a-a9d1-42c5-a6e5-4d60acc5a44e" : "sku-1"]),
      ).toString("base64url");
      return points ? `/v1/users/u-prop/points?cursor=${cursor}` : `/v1/users/u-prop/entitlements?cursor=${cursor}`;
    }),
);

/** Field values a caller might send that pass or just miss the rules: any code point, controls included. */
const looseText = (maxLength: number) =>
  fc.oneof(
    fc.string({ unit: "binary", minLength: 1, maxLength }),
    fc.string({ unit: "grapheme", minLength: 1, maxLength }),
    fc.string({
      unit: fc.constantFrom("a", " ", "\n", "\r", "\t", "\u001b", "\u007f", "é", "\u0301", "\u200b"),
      minLength: 1,
      maxLength,
    }),
  );

/** Grant/revoke bodies whose every field is arbitrary text: many are committed, many refused. */
export const looseCommand = fc.record({
  action: fc.constantFrom("grants" as const, "revokes" as const),
  body: fc.record({
    user_id: looseText(12),
    stock_keeping_unit: looseText(12),
    reason: looseText(12),
    purchase_id: looseText(12),
  }),
});

export const method = fc.oneof(
  { arbitrary: fc.constant("POST"), weight: 4 },
  fc.constantFrom("GET", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"),
);

export const headers = fc.record(
  {
    "idempotency-key": fc.oneof(
      { arbitrary: fc.uuid(), weight: 4 },
      headerBytes(300),
      // "a, b" is what two Idempotency-Key headers arrive as.
      fc.constantFrom("k-1", " ", "\t", "k\u0080", "x".repeat(256), "a, b"),
    ),
    "content-type": contentType,
    "x-trace-id": headerBytes(200),
    "x-request-id": headerBytes(200),
    authorization: fc.oneof(headerBytes(80), fc.constantFrom("Bearer ", "Bearer x y", "Basic Zm9vOmJhcg==")),
    "content-length": fc.constantFrom("0", "-1", "99999999", "abc"),
  },
  { requiredKeys: [] },
);
