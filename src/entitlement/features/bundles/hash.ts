// The request hash of a bundle grant: SHA-256 of its canonical JSON, written with the grant hash's Jackson escaping
// (idempotency/hash.ts). The action "BUNDLE_GRANT" keeps it apart from any grant or revoke under the same key.
import { jacksonString } from "../entitlements/hash.ts";
import type { BundleBody } from "./model.ts";

export function canonicalBundleJson(body: BundleBody): string {
  const s = jacksonString;
  const items = body.stock_keeping_units.map(s).join(",");
  return (
    `{${s("action")}:${s("BUNDLE_GRANT")},${s("user_id")}:${s(body.user_id)},` +
    `${s("stock_keeping_units")}:[${items}],${s("reason")}:${s(body.reason)},${s("purchase_id")}:${s(body.purchase_id)}` +
    `${body.expires_at === undefined ? "" : `,${s("expires_at")}:${s(body.expires_at)}`}}`
  );
}

export function bundleRequestHash(body: BundleBody): string {
  return new Bun.CryptoHasher("sha256").update(canonicalBundleJson(body)).digest("hex");
}
