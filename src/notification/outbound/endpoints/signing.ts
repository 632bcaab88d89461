// Standard Webhooks signatures of an endpoint: its current secret, and during a rotation's overlap its previous one
// too, space-separated in one `webhook-signature` header (`v1,<new> v1,<old>`), so a receiver that still has only the
// old secret keeps verifying while it is updated.
import { Webhook } from "standardwebhooks";
import type { SecretBox } from "./secrets.ts";

export type EndpointSecrets = {
  endpointId: string;
  secretCiphertext: string;
  previousSecretCiphertext: string | null;
  previousSecretUntil: Date | null;
};

/** Decrypting and keying a signer per request would cost more than the signature; the sealed text is the cache key. */
const MAX_CACHED = 1_000;

export function createSigner(box: SecretBox) {
  const signers = new Map<string, Webhook>();
  const signerOf = (endpointId: string, sealed: string): Webhook => {
    let signer = signers.get(sealed);
    if (!signer) {
      if (signers.size >= MAX_CACHED) signers.clear();
      signer = new Webhook(box.open(endpointId, sealed));
      signers.set(sealed, signer);
    }
    return signer;
  };
  return (secrets: EndpointSecrets, webhookId: string, at: Date, body: string): string => {
    const sealed = [secrets.secretCiphertext];
    if (secrets.previousSecretCiphertext && secrets.previousSecretUntil && secrets.previousSecretUntil > at) {
      sealed.push(secrets.previousSecretCiphertext);
    }
    return sealed.map((s) => signerOf(secrets.endpointId, s).sign(webhookId, at, body)).join(" ");
  };
}
export type Signer = ReturnType<typeof createSigner>;
