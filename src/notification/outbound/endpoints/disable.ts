// Auto-disable: an endpoint whose every attempt has failed for NOTIFICATION_ENDPOINT_DISABLE_AFTER is disabled, with a
// reason, one warning and the counter, instead of being retried for ever. Its deliveries wait; enabling it again
// sends them (and those that ended FAILED during the run of failures).
import type { Counter } from "prom-client";
import type { Db } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { Clock } from "../../../shared/runtime.ts";
import { disableFailingEndpoints } from "./delivery-queries.ts";

export function createAutoDisable(deps: {
  sql: Db;
  log: Logger;
  now: Clock;
  disableAfterMs: number;
  disabled: Counter;
}): (endpointIds: string[]) => Promise<void> {
  const hours = Math.round((deps.disableAfterMs / 3_600_000) * 10) / 10;
  return async (endpointIds) => {
    const now = deps.now();
    try {
      const disabled = await disableFailingEndpoints(deps.sql, {
        endpointIds,
        threshold: new Date(now.getTime() - deps.disableAfterMs),
        now,
        reason: `every attempt failed for ${hours}h`,
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
