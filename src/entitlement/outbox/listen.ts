// The relay's wake-up: LISTEN on the channel the outbox trigger NOTIFYs, so a committed event is published at once
// rather than at the next poll (docs/decisions.md, ADR-12).
import { sleep } from "../../shared/runtime.ts";
import type { RelayDeps } from "./batch.ts";
import { OUTBOX_CHANNEL } from "./queries.ts";

/**
 * LISTENs in the background, retrying while the database is away; every (re)listen calls `wake` so the loop catches
 * up. Returns the function that stops listening once the loop is done.
 */
export function listenForOutbox(
  deps: Pick<RelayDeps, "sql" | "log" | "settings">,
  wake: () => void,
  signal: AbortSignal,
): () => Promise<void> {
  let unlisten: (() => Promise<void>) | undefined;
  const started = (async () => {
    let failures = 0;
    while (!signal.aborted && !unlisten) {
      try {
        const meta = await deps.sql.listen(OUTBOX_CHANNEL, wake, wake);
        unlisten = meta.unlisten;
      } catch (error) {
        if (++failures === 1) deps.log.warn({ err: error }, `LISTEN ${OUTBOX_CHANNEL} failed; polling meanwhile`);
        await sleep(deps.settings.pollIntervalMs, signal);
      }
    }
  })();
  return async () => {
    await started;
    await unlisten?.().catch(() => {});
  };
}
