// Builds the endpoint delivery worker from the configuration (workers.ts); undefined when this process has no key to
// open the endpoints' secrets with.
import type { Handles, Waker, Worker } from "../../../shared/runtime.ts";
import { createSecretBox } from "../../features/endpoints/secrets.ts";
import type { EndpointSettings } from "../../features/endpoints/settings.ts";
import { cachingResolve, type Resolve, systemResolve } from "../../features/endpoints/url-guard.ts";
import type { NotificationMetrics } from "../../metrics.ts";
import { createAutoDisable } from "./disable.ts";
import { createOutcomeRecorder } from "./outcomes.ts";
import { createSigner } from "./signing.ts";
import { createEndpointDeliveryWorker } from "./worker.ts";

/** How long the delivery worker keeps a hostname's addresses (features/endpoints/url-guard.ts: they are checked at every delivery). */
export const RESOLVE_TTL_MS = 5_000;

export function endpointDeliveryWorker(
  deps: Handles & {
    /** The configuration's endpoint settings and the delivery settings they share (config.ts). */
    config: {
      endpoints: EndpointSettings;
      delivery: {
        leaseMs: number;
        pollIntervalMs: number;
        idlePollMs: number;
        errorMessageMaxLength: number;
        webhook: { timeoutMs: number };
      };
    };
    metrics: NotificationMetrics;
    waker: Waker;
    workerId: string;
    resolve?: Resolve;
  },
): Worker | undefined {
  const { config, sql, log, now } = deps;
  const e = config.endpoints;
  const d = config.delivery;
  if (!e.secretKey) return undefined;
  const onFailures = createAutoDisable({
    sql,
    log: log.child({ component: "endpoint-delivery" }),
    now,
    disableAfterMs: e.disableAfterMs,
    disabled: deps.metrics.endpointsDisabled,
  });
  return createEndpointDeliveryWorker({
    sql,
    log,
    now,
    metrics: deps.metrics,
    sign: createSigner(createSecretBox(e.secretKey, e.previousSecretKeys)),
    record: createOutcomeRecorder({ sql, lockedBy: deps.workerId, onFailures }),
    maxAttempts: e.maxAttempts,
    backoff: e.backoff,
    timeoutMs: d.webhook.timeoutMs,
    errorMessageMaxLength: d.errorMessageMaxLength,
    allowPrivate: e.allowPrivate,
    resolve: cachingResolve(deps.resolve ?? systemResolve, RESOLVE_TTL_MS),
    workerId: deps.workerId,
    waker: deps.waker,
    leaseMs: d.leaseMs,
    maxInFlight: e.maxInFlight,
    perEndpoint: e.perEndpoint,
    pollIntervalMs: d.pollIntervalMs,
    idlePollMs: d.idlePollMs,
  });
}
