// The relay loop: a batch as soon as a new event commits (LISTEN entitlement_outbox), the poll interval as the safety
// net, the next batch at once after a full one. It never dies: a failed batch is logged once per run of failures,
// counted, and retried after the poll interval. On abort it finishes the batch in flight, then returns.

import { sleep, Waker } from "../../shared/runtime.ts";
import type { Worker } from "../../shared/service.ts";
import { type BatchReport, type RelayDeps, relayOutboxBatch } from "./batch.ts";
import { failExhaustedOutboxClaims } from "./queries.ts";

export const OUTBOX_CHANNEL = "entitlement_outbox";

export type OutboxRelay = Worker & {
  /** One claim → publish → finalize pass, for tests and operators. */
  runOnce(): Promise<BatchReport>;
  /** Claim now rather than at the next poll (a reconnect, a notification). */
  wake(): void;
};

export function createOutboxRelay(deps: RelayDeps): OutboxRelay {
  const waker = new Waker();
  const runOnce = () => relayOutboxBatch(deps);

  async function step(): Promise<boolean> {
    const report = deps.isConnected() ? await runOnce() : undefined;
    if (report && report.claimed === deps.settings.batchSize) return true;
    const failed = await failExhaustedOutboxClaims(deps.sql, {
      now: deps.now(),
      maxAttempts: deps.settings.maxAttempts,
    });
    if (failed.length) {
      deps.metrics.countPublish("failed", failed.length);
      deps.log.error({ eventIds: failed }, "outbox events FAILED: every attempt was claimed and never finalized");
    }
    return false;
  }

  async function run(signal: AbortSignal): Promise<void> {
    const stopListening = listen(deps, () => waker.wake(), signal);
    let failures = 0;
    while (!signal.aborted) {
      let again = false;
      try {
        again = await step();
        if (failures > 0) deps.log.info({ failures }, "outbox relay recovered");
        failures = 0;
      } catch (error) {
        failures += 1;
        deps.metrics.countRelayError();
        if (failures === 1) deps.log.warn({ err: error }, "outbox relay batch failed; retrying every poll interval");
      }
      if (!again) await waker.wait(deps.settings.pollIntervalMs, signal);
    }
    await stopListening();
  }

  return { name: "outbox-relay", run, runOnce, wake: () => waker.wake() };
}

/** LISTENs in the background, retrying while the database is away; every (re)listen wakes the loop to catch up. */
function listen(deps: RelayDeps, wake: () => void, signal: AbortSignal): () => Promise<void> {
  let unlisten: (() => Promise<void>) | undefined;
  const started = (async () => {
    let failures = 0;
    while (!signal.aborted && !unlisten) {
      try {
        const meta = await deps.sql.listen(OUTBOX_CHANNEL, wake, wake);
        unlisten = meta.unlisten;
      } catch (error) {
        if (++failures === 1) deps.log.warn({ err: error }, "LISTEN entitlement_outbox failed; polling meanwhile");
        await sleep(deps.settings.pollIntervalMs, signal);
      }
    }
  })();
  return async () => {
    await started;
    await unlisten?.().catch(() => {});
  };
}
