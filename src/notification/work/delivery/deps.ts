// What the delivery worker needs, built once by the composition root.
import type { BackoffPolicy } from "../../../shared/backoff.ts";
import type { Sql } from "../../../shared/db.ts";
import type { Logger } from "../../../shared/logger.ts";
import type { Clock } from "../../../shared/runtime.ts";
import type { NotificationMetrics } from "../../metrics.ts";
import type { Sender } from "../channels/sender.ts";
import type { SentRecorder } from "./sent.ts";

export type DeliveryDeps = {
  sql: Sql;
  log: Logger;
  now: Clock;
  metrics: NotificationMetrics;
  send: Sender;
  /** Written to locked_by; finalizes only touch rows that still carry it. */
  workerId: string;
  batchSize: number;
  maxAttempts: number;
  leaseMs: number;
  errorMessageMaxLength: number;
  backoff: BackoffPolicy;
  random?: () => number;
  /** Marks a sent notification SENT (the worker groups them, sent.ts); without it, one markSent each. */
  recordSent?: SentRecorder;
};
