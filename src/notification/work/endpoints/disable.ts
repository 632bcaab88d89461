// Auto-disable: an endpoint whose every attempt has failed for NOTIFICATION_ENDPOINT_DISABLE_AFTER is disabled, with a
// reason, one warning and the counter, instead of being retried for ever. Its deliveries wait; enabling it again
// sends them (and those that ended FAILED during the run of failures).
import type { Counter } from "prom-client";
import type { Db } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { Clock } from "../../../shared/runtime.ts";
import { disableFailingEndpoints } from "./delivery-queries.ts";

/** Units from the largest, as NOTIFICATION_ENDPOINT_DISABLE_AFTER is written (`5d`, `36h`, `30m`, `45s`, `250ms`). */
const UNITS = [
  ["d", 86_400_000],
  ["h", 3_600_000],
  ["m", 60_000],
  ["s", 1_000],
] as const;

/** A window in the largest unit that holds it whole, so a reason never says `0h` for a window under an hour. */
export function windowText(ms: number): string {
  const unit = UNITS.find(([, size]) => ms >= size && ms % size === 0);
  return unit ? `${ms / unit[1]}${unit[0]}` : `${ms}ms`;
}

export function createAutoDisable(deps: {
  sql: Db;
  log: Logger;
  now: Clock;
  disableAfterMs: number;
  disabled: Counter;
}): (endpointIds: string[]) => Promise<void> {
  const reason = `every attempt failed for ${windowText(deps.disableAfterMs)}`;
  return async (endpointIds) => {
    const now = deps.now();
    try {
      const disabled = await disableFailingEndpoints(deps.sql, {
        endpointIds,
        threshold: new Date(now.getTime() - deps.disableAfterMs),
        now,
        reason,
      });
      for (const d of disabled) {
        deps.disabled.inc();
        deps.log.warn(
          { endpoint_id: d.endpointId, failing_since: d.failingSince.toISOString() },
          "webhook endpoint disabled: every attempt failed since failing_since",
        );
      }
    } catch (error) {
      deps.log.error(
        { err: error },
        "could not check failing endpoints for auto-disable; the next failure checks again",
      );
    }
  };
}
