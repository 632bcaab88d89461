// The variables of the scheduler and of points, spread into EntitlementEnv (config.ts): their descriptions generate
// docs/configuration.md.
import { type Static, Type } from "@sinclair/typebox";
import {
  Bool,
  backoffPolicy,
  backoffRules,
  Duration,
  Int,
  NonBlank,
  notGreater,
  type Rule,
  retryVariables,
} from "../../../shared/config.ts";

export const SchedulerEnv = {
  ENTITLEMENT_SCHEDULER_ENABLED: Bool(true, {
    description: "Run the scheduler of due work (point reservations) in this process.",
  }),
  ENTITLEMENT_SCHEDULER_POLL_INTERVAL: Duration("1s", {
    minimum: 1,
    description:
      "Longest sleep of the scheduler. It wakes at the next due time, and at once when earlier work is committed " +
      "(in memory, or by a signal from another replica); this is the safety net.",
  }),
  ENTITLEMENT_SCHEDULER_IDLE_POLL_INTERVAL: Duration("10s", {
    minimum: 1,
    description:
      "Longest sleep of the scheduler after a pass that found nothing due: it still wakes at the next due time and " +
      "for new work as above. At most ENTITLEMENT_SCHEDULER_POLL_INTERVAL: a fixed poll.",
  }),
  ENTITLEMENT_SCHEDULER_BATCH_SIZE: Int(100, { minimum: 1, maximum: 10000, description: "Items claimed per pass." }),
  ENTITLEMENT_SCHEDULER_MAX_BATCH_SIZE: Int(800, {
    minimum: 1,
    maximum: 10000,
    description:
      "While a kind's claims come back full (a burst) each claim doubles, up to this size; the first that is not " +
      "full goes back to ENTITLEMENT_SCHEDULER_BATCH_SIZE. A smaller value means no growth.",
  }),
  ENTITLEMENT_SCHEDULER_CONCURRENCY: Int(4, {
    minimum: 1,
    maximum: 64,
    description: "Executions (each its own transaction) in flight at once; at most DATABASE_POOL_MAX.",
  }),
  ENTITLEMENT_SCHEDULER_LEASE: Duration("30s", {
    minimum: 1,
    description: "How long a claim is held before another replica may take the item over.",
  }),
  ...retryVariables("ENTITLEMENT_SCHEDULER", {
    attempts: "Execution attempts before FAILED.",
    errorMessage: "last_error is cut to this many characters.",
  }),
  ENTITLEMENT_POINTS_NATS_SUBJECT: NonBlank("points.events", { description: "Subject PointsEvent is published to." }),
  ENTITLEMENT_POINTS_NATS_STREAM: NonBlank("points-events", {
    description: "JetStream stream of the points subject, created and updated here (duplicate window as above).",
  }),
  ENTITLEMENT_POINTS_RESERVATION_TTL: Duration("30d", {
    minimum: 1,
    description:
      "DONE and CANCELLED point reservations older than this are deleted by retention; transactions and " +
      "balances are kept.",
  }),
};

const SchedulerSchema = Type.Object(SchedulerEnv);
type SchedulerKeys = Static<typeof SchedulerSchema> & {
  ENTITLEMENT_NATS_SUBJECT: string;
  ENTITLEMENT_NATS_STREAM: string;
  DATABASE_POOL_MAX: number;
};

const distinct =
  (a: keyof SchedulerKeys, b: keyof SchedulerKeys): Rule<SchedulerKeys> =>
  (e) =>
    e[a] === e[b] ? `${a} and ${b} must differ (both are ${JSON.stringify(e[a])})` : undefined;

export const schedulerRules: Rule<SchedulerKeys>[] = [
  ...(backoffRules("ENTITLEMENT_SCHEDULER") as Rule<SchedulerKeys>[]),
  notGreater("ENTITLEMENT_SCHEDULER_CONCURRENCY", "DATABASE_POOL_MAX"),
  distinct("ENTITLEMENT_POINTS_NATS_SUBJECT", "ENTITLEMENT_NATS_SUBJECT"),
  distinct("ENTITLEMENT_POINTS_NATS_STREAM", "ENTITLEMENT_NATS_STREAM"),
];

export function schedulerConfig(e: SchedulerKeys) {
  return {
    scheduler: {
      enabled: e.ENTITLEMENT_SCHEDULER_ENABLED,
      pollIntervalMs: e.ENTITLEMENT_SCHEDULER_POLL_INTERVAL,
      idlePollIntervalMs: e.ENTITLEMENT_SCHEDULER_IDLE_POLL_INTERVAL,
      batchSize: e.ENTITLEMENT_SCHEDULER_BATCH_SIZE,
      maxBatchSize: e.ENTITLEMENT_SCHEDULER_MAX_BATCH_SIZE,
      concurrency: e.ENTITLEMENT_SCHEDULER_CONCURRENCY,
      leaseMs: e.ENTITLEMENT_SCHEDULER_LEASE,
      maxAttempts: e.ENTITLEMENT_SCHEDULER_MAX_ATTEMPTS,
      errorMessageMaxLength: e.ENTITLEMENT_SCHEDULER_ERROR_MESSAGE_MAX_LENGTH,
      backoff: backoffPolicy("ENTITLEMENT_SCHEDULER", e),
    },
    points: {
      subject: e.ENTITLEMENT_POINTS_NATS_SUBJECT,
      stream: e.ENTITLEMENT_POINTS_NATS_STREAM,
      reservationTtlMs: e.ENTITLEMENT_POINTS_RESERVATION_TTL,
    },
  };
}
