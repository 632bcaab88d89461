// What the edge needs of every Entitlement route's deps (the features add a command's: features/commands/run.ts), and
// how a route answers a database it cannot reach.
import { isDatabaseUnavailable, isTransientDbError, SqlState } from "../../shared/db.ts";
import { ApiError } from "../../shared/http/errors.ts";
import type { Logger } from "../../shared/logger.ts";
import type { Gate } from "./limits/gate.ts";

export type EdgeDeps = {
  log: Logger;
  /** The name of the caller the edge authenticated ('' when authentication is disabled). */
  callerOf: (request: Request) => string;
  /** Every database call of a request runs through it (limits/gate.ts). */
  gate: Gate;
  /** Told when a request found the database unavailable: readiness reflects it, and it logs (createUnavailableReporter). */
  onUnavailable?: (error: unknown) => void;
};

/**
 * A lost, full or stuck database is worth a retry (503); anything else stays a 500. Stuck: a statement or lock wait
 * cut off by its timeout (57014; 55P03 from the lock_timeout of a command function). An unavailable database (no
 * connection to be had, SQLSTATE 53300, a refused login or TLS handshake included) is reported rather than logged
 * here, so that /readyz says so too and an outage is not one log line per request.
 */
export function unavailableOr(deps: Pick<EdgeDeps, "log" | "onUnavailable">, error: unknown): never {
  const code = (error as { code?: unknown })?.code;
  if (isTransientDbError(error) || code === SqlState.queryCanceled || code === SqlState.lockNotAvailable) {
    if (isDatabaseUnavailable(error) && deps.onUnavailable) deps.onUnavailable(error);
    else deps.log.warn({ err: error }, "database unavailable");
    throw new ApiError(503, "NOT_READY", "database unavailable, retry later");
  }
  throw error;
}

/** Runs a request's database work through the gate; a database it cannot reach is a 503 (unavailableOr). */
export function throughGate<T>(deps: Pick<EdgeDeps, "gate" | "log" | "onUnavailable">, work: () => Promise<T>) {
  return deps.gate.run(work).catch((error) => unavailableOr(deps, error));
}

/**
 * The onUnavailable of createApp: `report` (readiness) hears of every failure; the log, of the first failure of each code
 * in an episode (a dropped connection, then the TLS failure of every new one), each as one warning with the
 * error's code and message only (the peer certificate a TLS error carries, or a stack, would add nothing). An episode ends after
 * `quietMs` without a failure; the 503 responses themselves are counted by the HTTP metrics.
 */
export function createUnavailableReporter(options: {
  log: Logger;
  report: (error: unknown) => void;
  quietMs?: number;
  now?: () => number;
}): (error: unknown) => void {
  const quietMs = options.quietMs ?? 10_000;
  const now = options.now ?? (() => performance.now());
  let lastAt = Number.NEGATIVE_INFINITY;
  /** The codes logged in this episode. */
  const logged = new Set<unknown>();
  return (error) => {
    options.report(error);
    const at = now();
    if (at - lastAt >= quietMs) logged.clear();
    lastAt = at;
    const code = (error as { code?: unknown })?.code;
    if (logged.has(code)) return;
    logged.add(code);
    const reason = error instanceof Error ? error.message : String(error);
    options.log.warn({ code, reason }, "database unavailable");
  };
}
