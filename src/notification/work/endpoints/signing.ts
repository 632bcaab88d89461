// Standard Webhooks signatures of an endpoint: its current secret, and during a rotation's overlap its previous one
// (and those of earlier rotations still within theirs) too, space-separated in one `webhook-signature` header
// (`v1,<new> v1,<old>`), so a receiver that still has only an old secret keeps verifying while it is updated. Each is
// made by the channel's signer (channels/webhook.ts signWith).
import type { SecretBox } from "../../features/endpoints/secrets.ts";
import { signingKey, signWith } from "../channels/webhook.ts";

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
