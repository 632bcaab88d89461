// Standard Webhooks signatures of an endpoint: its current secret, and during a rotation's overlap its previous one
// (and those of earlier rotations still within theirs) too, space-separated in one `webhook-signature` header
// (`v1,<new> v1,<old>`), so a receiver that still has only an old secret keeps verifying while it is updated. The HMAC is node:crypto's: the same signature as the standardwebhooks
// package computes (a unit test compares them), at a fraction of the CPU of its JavaScript SHA-256.
import { createHmac } from "node:crypto";
import type { SecretBox } from "../../features/endpoints/secrets.ts";

export type EndpointSecrets = {
  endpointId: string;
  secretCiphertext: string;
  previousSecretCiphertext: string | null;
  previousSecretUntil: Date | null;
  /** Earlier rotations' secrets, each signed with until its own overlap ends. */
  olderSecrets: { sealed: string; until: Date }[];
};

/** Decrypting a secret per request would cost more than the signature; the sealed text is the cache key. */
const MAX_CACHED = 1_000;

const PREFIX = "whsec_";

/** The key a `whsec_` secret stands for: the base64 after the prefix, decoded. */
export function signingKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64");
}

/** `v1,<base64 HMAC-SHA256 of "<id>.<unix seconds>.<body>">`. */
export function signWith(key: Buffer, webhookId: string, at: Date, body: string): string {
  const content = `${webhookId}.${Math.floor(at.getTime() / 1000)}.${body}`;
  return `v1,${createHmac("sha256", key).update(content).digest("base64")}`;
}

export function createSigner(box: SecretBox) {
  const keys = new Map<string, Buffer>();
  const keyOf = (endpointId: string, sealed: string): Buffer => {
    let key = keys.get(sealed);
    if (!key) {
      if (keys.size >= MAX_CACHED) keys.clear();
      key = signingKey(box.open(endpointId, sealed));
      keys.set(sealed, key);
    }
    return key;
  };
  return (secrets: EndpointSecrets, webhookId: string, at: Date, body: string): string => {
    const previous = secrets.previousSecretCiphertext;
    const old =
      previous && secrets.previousSecretUntil ? [{ sealed: previous, until: secrets.previousSecretUntil }] : [];
    const live = [...old, ...secrets.olderSecrets].filter((s) => s.until > at).map((s) => s.sealed);
    return [secrets.secretCiphertext, ...live]
      .map((sealed) => signWith(keyOf(secrets.endpointId, sealed), webhookId, at, body))
      .join(" ");
  };
}
export type Signer = ReturnType<typeof createSigner>;
