// LISTEN on a channel in the background, retrying while the database is away. Every (re)listen also calls
// `onListen`, so a loop catches up on whatever was notified while it was not listening.
import type { Sql } from "./db.ts";
import type { Logger } from "./logger.ts";
import { sleep } from "./runtime.ts";

/** Starts listening; the returned function stops it (after the start finished or was aborted). */
export function listenInBackground(
  sql: Sql,
  args: {
    channel: string;
    onNotify: (payload: string) => void;
    onListen: () => void;
    log: Logger;
    retryMs: number;
    signal: AbortSignal;
  },
): () => Promise<void> {
  let unlisten: (() => Promise<void>) | undefined;
  const started = (async () => {
    let failures = 0;
    while (!args.signal.aborted && !unlisten) {
      try {
        const meta = await sql.listen(args.channel, args.onNotify, args.onListen);
        unlisten = meta.unlisten;
      } catch (error) {
        if (++failures === 1) args.log.warn({ err: error, channel: args.channel }, "LISTEN failed; polling meanwhile");
        await sleep(args.retryMs, args.signal);
      }
    }
  })();
  return async () => {
    await started;
    await unlisten?.().catch(() => {});
  };
}
