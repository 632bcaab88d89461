// Endpoint signing secrets: generated here, shown once, stored encrypted. AES-256-GCM under
// NOTIFICATION_ENDPOINT_SECRET_KEY, the endpoint id as additional data, so a database dump alone reveals no secret and
// a ciphertext copied onto another endpoint does not decrypt (docs/decisions.md).
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

/** 32 random bytes behind the Standard Webhooks prefix (its libraries read the base64 after `whsec_`). */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

export type SecretBox = {
  seal: (endpointId: string, secret: string) => string;
  open: (endpointId: string, sealed: string) => string;
  /** Whether `sealed` was sealed with the current key (what `endpoints reseal` changes when it was not). */
  isCurrent: (sealed: string) => boolean;
};

const keyIdOf = (key: Buffer) => createHash("sha256").update(key).digest("hex").slice(0, 8);

function openWith(key: Buffer, endpointId: string, iv: string, tag: string, body: string): string {
  const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
  decipher.setAAD(Buffer.from(endpointId));
  decipher.setAuthTag(Buffer.from(tag, "base64url"));
  return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8");
}

/**
 * Sealed text is `v1.<key id>.<iv>.<tag>.<ciphertext>` (base64url parts). The key id, 8 hex characters of the key's
 * SHA-256, picks the key that opens it among the current one and `previous` (NOTIFICATION_ENDPOINT_PREVIOUS_SECRET_KEYS,
 * kept while secrets sealed with them remain), and makes a missing key a clear error instead of a failed tag check.
 */
export function createSecretBox(key: Buffer, previous: readonly Buffer[] = []): SecretBox {
  if ([key, ...previous].some((k) => k.length !== 32)) throw new Error("an endpoint secret key must be 32 bytes");
  const keyId = keyIdOf(key);
  const keys = new Map([...previous, key].map((k) => [keyIdOf(k), k]));
  return {
    seal: (endpointId, secret) => {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      cipher.setAAD(Buffer.from(endpointId));
      const body = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
      return ["v1", keyId, iv, cipher.getAuthTag(), body]
        .map((p) => (typeof p === "string" ? p : p.toString("base64url")))
        .join(".");
    },
    open: (endpointId, sealed) => {
      const [version, id = "", iv, tag, body] = sealed.split(".");
      if (version !== "v1" || iv === undefined || tag === undefined || body === undefined) {
        throw new Error("the stored endpoint secret is not in a known format");
      }
      const opener = keys.get(id);
      if (!opener) throw new Error(`the endpoint secret was sealed with another key (${id}, this one is ${keyId})`);
      return openWith(opener, endpointId, iv, tag, body);
    },
    isCurrent: (sealed) => sealed.split(".")[1] === keyId,
  };
}
