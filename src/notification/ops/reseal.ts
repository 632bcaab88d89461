// `notification endpoints reseal`: after NOTIFICATION_ENDPOINT_SECRET_KEY changed (the old key moved to
// NOTIFICATION_ENDPOINT_PREVIOUS_SECRET_KEYS), seal every endpoint's secrets with the current key, so that the old key
// can be dropped. The secrets themselves do not change: receivers notice nothing. A second run finds nothing to do.
import type { OpsDeps } from "../../shared/ops.ts";
import type { NotificationConfig } from "../config.ts";
import { listSealedSecrets, replaceSealedSecrets, type SealedSecrets } from "../features/endpoints/queries.ts";
import { createSecretBox, type SecretBox } from "../features/endpoints/secrets.ts";

function resealed(box: SecretBox, s: SealedSecrets): SealedSecrets | undefined {
  const previous = s.previous_secret_ciphertext;
  const all = [s.secret_ciphertext, ...(previous === null ? [] : [previous]), ...s.older_secrets.map((o) => o.sealed)];
  if (all.every((sealed) => box.isCurrent(sealed))) return undefined;
  const again = (sealed: string) =>
    box.isCurrent(sealed) ? sealed : box.seal(s.endpoint_id, box.open(s.endpoint_id, sealed));
  return {
    endpoint_id: s.endpoint_id,
    secret_ciphertext: again(s.secret_ciphertext),
    previous_secret_ciphertext: previous === null ? null : again(previous),
    older_secrets: s.older_secrets.map((o) => ({ sealed: again(o.sealed), until: o.until })),
  };
}

export async function resealSecrets({ sql, out, config }: OpsDeps & { config: NotificationConfig }): Promise<number> {
  const { secretKey, previousSecretKeys } = config.endpoints;
  if (!secretKey) {
    out("NOTIFICATION_ENDPOINT_SECRET_KEY is not set: nothing can be sealed");
    return 1;
  }
  const box = createSecretBox(secretKey, previousSecretKeys);
  let changed = 0;
  for (const sealed of await listSealedSecrets(sql)) {
    const after = resealed(box, sealed);
    if (after && (await replaceSealedSecrets(sql, sealed, after))) {
      changed++;
      out(`endpoint ${sealed.endpoint_id}: sealed with the current key`);
    }
  }
  out(
    changed === 0
      ? "every endpoint secret is sealed with the current key: nothing to do"
      : `${changed} endpoint(s) resealed`,
  );
  return 0;
}
