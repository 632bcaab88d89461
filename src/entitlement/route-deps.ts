// What every Entitlement route receives from createApp (app.ts), and how a route answers a database it cannot reach.
import { isDatabaseUnavailable, isTransientDbError, SqlState } from "../shared/db.ts";
import { ApiError } from "../shared/http/errors.ts";
import type { Logger } from "../shared/logger.ts";
import type { CommandDeps } from "./entitlements/service.ts";
import type { Gate } from "./limits/gate.ts";

export type RouteDeps = CommandDeps & {
  log: Logger;
  /** The name of the caller the edge authenticated ('' when authentication is disabled). */
  callerOf: (request: Request) => string;
  /** Every database call of a request runs through it (limits/gate.ts). */
  gate: Gate;
  /** Told when a request found the database unavailable (readiness reflects it). */
  onUnavailable?: (error: unknown) => void;
};

/**
 * A lost, full or stuck database is worth a retry (503); anything else stays a 500. Stuck: a statement or lock wait
 * cut off by its timeout (57014; 55P03 from the lock_timeout of `entitlement_command`). An unavailable database (no
 * connection to be had, SQLSTATE 53300 included) is also reported, so that /readyz says so too.
 */
export function unavailableOr(deps: Pick<RouteDeps, "log" | "onUnavailable">, error: unknown): never {
  const code = (error as { code?: unknown })?.code;
  if (isTransientDbError(error) || code === SqlState.queryCanceled || code === SqlState.lockNotAvailable) {
    if (isDatabaseUnavailable(error)) deps.onUnavailable?.(error);
    deps.log.warn({ err: error }, "database unavailable");
    throw new ApiError(503, "NOT_READY", "database unavailable, retry later");
  }
  throw error;
}
