// The relay's wake-up: LISTEN on the channel the outbox trigger NOTIFYs, so a committed event is published at once
// rather than at the next poll (docs/decisions.md, ADR-12).
import { listenInBackground } from "../../shared/listen.ts";
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
  return listenInBackground(deps.sql, {
    channel: OUTBOX_CHANNEL,
    onNotify: wake,
    onListen: wake,
    log: deps.log,
    retryMs: deps.settings.pollIntervalMs,
    signal,
  });
}
