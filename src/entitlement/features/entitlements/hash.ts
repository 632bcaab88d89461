// The request hash of the Java original: SHA-256 (lower-case hex) of the compact JSON of
// {action, user_id, stock_keeping_unit, reason, purchase_id}, in exactly that key order, escaped as Jackson escapes.
// Records stored by the original system hash the same way, so the escaping has to match byte for byte.

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
