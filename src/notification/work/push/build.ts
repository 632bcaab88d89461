// The push worker from the configuration: a sender per configured platform (none configured: no worker).
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { Clock, Waker, Worker } from "../../../shared/runtime.ts";
import type { NotificationConfig } from "../../config.ts";
import type { Resolve } from "../../features/endpoints/url-guard.ts";
import { readServiceAccount } from "../../features/push/settings.ts";
import type { NotificationMetrics } from "../../metrics.ts";
import type { PushSenders } from "./deliver.ts";
import { createFcmSender } from "./fcm.ts";
import { createFcmAccessTokens } from "./fcm-auth.ts";
import { createWebPushSender } from "./webpush.ts";
import { createPushWorker } from "./worker.ts";

export type PushWorkerInput = {
  config: NotificationConfig;
  sql: Sql;
  log: Logger;
  now: Clock;
  metrics: NotificationMetrics;
  workerId: string;
  waker: Waker;
  resolve?: Resolve;
};

export function pushSenders(input: PushWorkerInput): PushSenders {
  const p = input.config.push;
  const common = { now: input.now, defaultTtlSeconds: p.defaultTtlSeconds, timeoutMs: p.timeoutMs };
  const account = readServiceAccount(p.fcmServiceAccountFile);
  return {
    webpush: p.vapid
      ? createWebPushSender({
          ...common,
          vapid: p.vapid,
          allowPrivate: input.config.endpoints.allowPrivate,
          resolve: input.resolve,
        })
      : undefined,
    fcm: account
      ? createFcmSender({
          ...common,
          projectId: account.projectId,
          baseUrl: p.fcmBaseUrl,
          tokens: createFcmAccessTokens({ account, now: input.now, timeoutMs: p.timeoutMs }),
        })
      : undefined,
  };
}

export function pushWorker(input: PushWorkerInput): Worker | undefined {
  const senders = pushSenders(input);
  if (!senders.webpush && !senders.fcm) return undefined;
  const p = input.config.push;
  const delivery = input.config.delivery;
  return createPushWorker({
    ...input,
    senders,
    maxAttempts: p.maxAttempts,
    backoff: p.backoff,
    errorMessageMaxLength: delivery.errorMessageMaxLength,
    leaseMs: Math.max(delivery.leaseMs, p.timeoutMs * 2),
    maxInFlight: p.maxInFlight,
    perService: p.perService,
    pollIntervalMs: delivery.pollIntervalMs,
    idlePollMs: delivery.idlePollMs,
  });
}
