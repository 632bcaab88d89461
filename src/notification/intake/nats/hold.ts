// A database outage is not the message's fault: while PostgreSQL is unreachable, the messages in hand are kept in
// progress (`working()`, which restarts ack_wait without counting a delivery) and the write is retried, instead of
// nak-ing them toward max_deliver. Ten naks of a few seconds each would otherwise give up an event during a
// one-minute outage, with nowhere to record it (the DLQ table is in the same database).
import type { JsMsg } from "@nats-io/jetstream";
import { isTransientDbError } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import { sleep } from "../../../shared/runtime.ts";

export type HoldOptions = {
  log: Logger;
  signal?: AbortSignal;
  /** Delay between two tries, capped at 2 s. (The pull loop also keeps every message in hand in progress: in-hand.ts.) */
  retryMs?: number;
  /** Decides which failures are an outage (default: lost connections, restarts, serialization failures). */
  isTransient?: (error: unknown) => boolean;
};

export type HoldResult<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * Runs `write` until it succeeds, retrying while the failure is transient and `signal` has not aborted. Returns the
 * last error otherwise (a permanent failure, or shutdown), for the caller to nak.
 */
export async function holdWhileDatabaseDown<T>(
  messages: JsMsg[],
  write: () => Promise<T>,
  options: HoldOptions,
): Promise<HoldResult<T>> {
  const isTransient = options.isTransient ?? isTransientDbError;
  const retryMs = Math.min(options.retryMs ?? 1_000, 2_000);
  // working() runs on its own timer for as long as the write is not done: one try can itself take longer than
  // ack_wait (postgres.js waits between reconnects, up to 20 s after many failures).
  const keepAlive = setInterval(() => {
    for (const message of messages) {
      try {
        message.working();
      } catch {
        // The connection is gone: the server redelivers after ack_wait, and storing twice is deduplicated.
      }
    }
  }, retryMs);
  try {
    for (let tries = 1; ; tries++) {
      try {
        const value = await write();
        if (tries > 1) options.log.info({ tries, messages: messages.length }, "database is back, messages stored");
        return { ok: true, value };
      } catch (error) {
        if (!isTransient(error) || options.signal?.aborted) return { ok: false, error };
        if (tries === 1) {
          options.log.warn({ err: error, messages: messages.length }, "database unreachable, holding messages");
        }
        await sleep(retryMs, options.signal);
      }
    }
  } finally {
    clearInterval(keepAlive);
  }
}
