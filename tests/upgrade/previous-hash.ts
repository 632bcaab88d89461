// The previous release's request hashes (640b121: write/idempotency/hash.ts, features/bundles/hash.ts, features/points/hash.ts),
// frozen: a replay across releases needs both to hash a request alike, so neither side may follow the other's changes.

export type HashedRequest = {
  action: "GRANT" | "REVOKE" | "EXTEND";
  user_id: string;
  stock_keeping_unit: string;
  reason: string;
  purchase_id: string;
  /** A grant's expiry, as UTC ISO-8601. Hashed only when present: requests without it keep the Java original's hash. */
  expires_at?: string;
};

const SHORT_ESCAPES: Record<number, string> = { 8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r" };

/**
 * A JSON string literal as Jackson writes it: `"` and `\` escaped, \b \t \n \f \r in short form, the other control
 * characters as `\u00XX` with upper-case hex; everything else (DEL and non-ASCII included) written as is.
 */
export function jacksonString(value: string): string {
  let out = '"';
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code === 0x22) out += '\\"';
    else if (code === 0x5c) out += "\\\\";
    else if (code < 0x20) out += SHORT_ESCAPES[code] ?? `\\u${code.toString(16).toUpperCase().padStart(4, "0")}`;
    else out += value[i];
  }
  return `${out}"`;
}

/** The exact text that is hashed. */
export function canonicalRequestJson(request: HashedRequest): string {
  const fields = [
    ["action", request.action],
    ["user_id", request.user_id],
    ["stock_keeping_unit", request.stock_keeping_unit],
    ["reason", request.reason],
    ["purchase_id", request.purchase_id],
    ...(request.expires_at === undefined ? [] : [["expires_at", request.expires_at]]),
  ] as const;
  return `{${fields.map(([key, value]) => `${jacksonString(key)}:${jacksonString(value)}`).join(",")}}`;
}

/** 64 lower-case hex characters. Lone UTF-16 surrogates are encoded as U+FFFD, as in every UTF-8 encoder. */
export function requestHash(request: HashedRequest): string {
  return new Bun.CryptoHasher("sha256").update(canonicalRequestJson(request)).digest("hex");
}

export type PreviousBundleBody = {
  user_id: string;
  stock_keeping_units: string[];
  reason: string;
  purchase_id: string;
  expires_at?: string;
};

export function canonicalBundleJson(body: PreviousBundleBody): string {
  const s = jacksonString;
  const items = body.stock_keeping_units.map(s).join(",");
  return (
    `{${s("action")}:${s("BUNDLE_GRANT")},${s("user_id")}:${s(body.user_id)},` +
    `${s("stock_keeping_units")}:[${items}],${s("reason")}:${s(body.reason)},${s("purchase_id")}:${s(body.purchase_id)}` +
    `${body.expires_at === undefined ? "" : `,${s("expires_at")}:${s(body.expires_at)}`}}`
  );
}

export function bundleRequestHash(body: PreviousBundleBody): string {
  return new Bun.CryptoHasher("sha256").update(canonicalBundleJson(body)).digest("hex");
}

export type PointsRequest =
  | { action: "RESERVE"; user_id: string; point_amount: number; execute_at: string; reason: string | null }
  | { action: "CANCEL"; reservation_id: string };

export function pointsRequestHash(request: PointsRequest): string {
  const fields =
    request.action === "RESERVE"
      ? [request.action, request.user_id, request.point_amount, request.execute_at, request.reason]
      : [request.action, request.reservation_id];
  return new Bun.CryptoHasher("sha256").update(JSON.stringify(fields)).digest("hex");
}
