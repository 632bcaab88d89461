// Entitlement configuration: every setting is an environment variable (docs/configuration.md).
import { type Static, Type } from "@sinclair/typebox";
import { JwtEnv, jwtRules, jwtSettings } from "../shared/auth/jwt-config.ts";
import { parseTokenEntries } from "../shared/auth/tokens.ts";
import {
  Bool,
  backoffPolicy,
  backoffRules,
  CommonConfig,
  commonSettings,
  Duration,
  databaseUrlReadable,
  Int,
  NonBlank,
  Num,
  notGreater,
  Optional,
  parseEnv,
  type Rule,
  retryVariables,
  ServerPortAlias,
} from "../shared/config.ts";
import { consoleSettings, consoleVariables } from "../shared/console/config.ts";
import { NATS_SECRET_VARIABLES, natsConnection, natsRules, natsVariables } from "../shared/nats-security.ts";
import { exportRequested } from "../shared/tracing.ts";
import { SchedulerEnv, schedulerConfig, schedulerRules } from "./work/scheduler/config.ts";

export const EntitlementEnv = Type.Object({
  ...CommonConfig,
  ...natsVariables("_INBOX_entitlement"),
  ...ServerPortAlias,
  PORT: Int(8080, { minimum: 0, maximum: 65535, description: "HTTP port of the Entitlement API." }),
  ENTITLEMENT_IDEMPOTENCY_TTL_HOURS: Int(24, { minimum: 1, description: "How long an Idempotency-Key is remembered." }),
  ENTITLEMENT_OUTBOX_ENABLED: Bool(true, { description: "Run the outbox relay in this process." }),
  ENTITLEMENT_OUTBOX_POLL_INTERVAL: Duration("1s", {
    minimum: 1,
    description:
      "Safety-net poll of the relay (new events wake it at once: in memory, or by a signal from another replica).",
  }),
  ENTITLEMENT_OUTBOX_IDLE_POLL_INTERVAL: Duration("10s", {
    minimum: 1,
    description:
      "Longest sleep of an idle relay (two passes in a row found nothing): it wakes for new events as above, at the " +
      "next retry time or lease end, and otherwise after this long. At most ENTITLEMENT_OUTBOX_POLL_INTERVAL: a " +
      "fixed poll.",
  }),
  ENTITLEMENT_OUTBOX_BATCH_SIZE: Int(50, { minimum: 1, maximum: 10000, description: "Events claimed per batch." }),
  ENTITLEMENT_OUTBOX_MAX_BATCH_SIZE: Int(400, {
    minimum: 1,
    maximum: 10000,
    description:
      "While claims come back full (a backlog) each batch doubles, up to this size: fewer statements per event. " +
      "The first batch that is not full goes back to ENTITLEMENT_OUTBOX_BATCH_SIZE; a smaller value means no growth.",
  }),
  ENTITLEMENT_OUTBOX_CONCURRENCY: Int(4, {
    minimum: 1,
    maximum: 64,
    description:
      "Batches one relay keeps in flight at once: the next claim overlaps the publish and finalize of earlier " +
      "batches. Batches may then complete out of order; consumers order by version. 1 is strictly sequential.",
  }),
  ...retryVariables("ENTITLEMENT_OUTBOX", {
    attempts: "Publish attempts before an event is FAILED.",
    errorMessage: "last_error is cut to this many characters.",
  }),
  ENTITLEMENT_OUTBOX_LEASE: Duration("30s", {
    minimum: 1,
    description: "How long a claim is held before another relay may take it over.",
  }),
  ENTITLEMENT_OUTBOX_PUBLISHED_TTL: Duration("24h", { description: "PUBLISHED events older than this are deleted." }),
  ENTITLEMENT_NATS_SUBJECT: NonBlank("entitlement.events", { description: "Subject events are published to." }),
  ENTITLEMENT_NATS_STREAM: NonBlank("entitlement-events", {
    description: "JetStream stream, created and updated here.",
  }),
  ENTITLEMENT_NATS_DUPLICATE_WINDOW: Duration("2m", {
    minimum: 1,
    description: "JetStream duplicate window (Nats-Msg-Id dedupe).",
  }),
  ENTITLEMENT_NATS_STREAM_REPLICAS: Int(1, {
    minimum: 1,
    maximum: 5,
    description:
      "Replicas of the stream (JetStream allows 1 to 5; 3 on a 3-node cluster, so losing one node loses nothing). " +
      "Applied when the stream is created and put back at every start, like the subject.",
  }),
  ...SchedulerEnv,
  ENTITLEMENT_RETENTION_ENABLED: Bool(true, {
    description: "Delete expired idempotency keys, old PUBLISHED events and old finished point reservations.",
  }),
  ENTITLEMENT_RETENTION_CLEANUP_INTERVAL: Duration("1h", { minimum: 1, description: "How often retention runs." }),
  ENTITLEMENT_AUDIT_RETENTION: Duration("0", {
    description:
      "Months of the audit log (entitlement_audit) wholly older than this are detached and dropped by partition " +
      "maintenance, whatever ENTITLEMENT_RETENTION_ENABLED says; 0 keeps the audit forever. To archive a month " +
      "first, detach and dump it (`entitlement partitions`, docs/operations.md).",
  }),
  ENTITLEMENT_PARTITION_MAINTENANCE_INTERVAL: Duration("1h", {
    minimum: 1,
    description:
      "How often the month partitions of the history tables are created ahead, their default partitions counted " +
      "and the audit retention applied (also at start).",
  }),
  ENTITLEMENT_PARTITION_MONTHS_AHEAD: Int(3, {
    minimum: 1,
    maximum: 24,
    description: "Month partitions kept ready beyond the current month, so no insert falls into the default one.",
  }),
  ENTITLEMENT_AUTH_TOKENS: Optional({
    description:
      "Bearer tokens as name:sha256hex:scopes entries, comma-separated; scopes read, write or read+write. " +
      "Digests only (`entitlement token new NAME SCOPES` prints a token and its entry); a name may have several.",
  }),
  ...JwtEnv,
  ENTITLEMENT_AUTH_DISABLED: Bool(false, {
    description:
      "Serve the API without authentication (local use only); the service refuses to start without tokens otherwise.",
  }),
  ENTITLEMENT_METRICS_PUBLIC: Bool(false, {
    description: "Serve /metrics and /openapi.json without a token (false: the read scope is required).",
  }),
  ENTITLEMENT_RATE_LIMIT_ENABLED: Bool(true, { description: "Limit the request rate of each caller (token name)." }),
  ENTITLEMENT_RATE_LIMIT_RPS: Num(1000, {
    minimum: 0.01,
    description: "Sustained requests per second of one caller; beyond it 429 RATE_LIMITED with Retry-After.",
  }),
  ENTITLEMENT_RATE_LIMIT_BURST: Int(2000, { minimum: 1, description: "Requests one caller may make at once." }),
  ENTITLEMENT_REQUEST_TIMEOUT: Duration("10s", {
    minimum: 1,
    description: "Longest a request may take once its body is read; then 503 NOT_READY.",
  }),
  ENTITLEMENT_REQUEST_QUEUE_TIMEOUT: Duration("1s", {
    minimum: 1,
    description: "How long a request waits for one of DATABASE_POOL_MAX database slots before 503 NOT_READY.",
  }),
  ...consoleVariables("ENTITLEMENT", "an API token: read scope to look, write scope to act"),
  ENTITLEMENT_CONSOLE_UNDO_WINDOW: Duration("24h", {
    minimum: 1000,
    description: "How long a change made in the console offers its undo on the entitlement's history.",
  }),
});
export type EntitlementEnv = Static<typeof EntitlementEnv>;

const tokensAreValid: Rule<EntitlementEnv> = (e) => parseTokenEntries(e.ENTITLEMENT_AUTH_TOKENS ?? "").problems;

/** Fail closed: serving needs tokens (static or from an issuer), or an explicit ENTITLEMENT_AUTH_DISABLED=true, never both. */
const tokensOrDisabled: Rule<EntitlementEnv> = (e) => {
  const tokens = Boolean(e.ENTITLEMENT_AUTH_TOKENS) || Boolean(e.ENTITLEMENT_AUTH_JWT_ISSUER);
  if (!tokens && !e.ENTITLEMENT_AUTH_DISABLED)
    return "ENTITLEMENT_AUTH_TOKENS is not set and ENTITLEMENT_AUTH_DISABLED is not true: configure at least one token (entitlement token new NAME SCOPES) or an issuer (ENTITLEMENT_AUTH_JWT_ISSUER), or disable authentication explicitly";
  if (tokens && e.ENTITLEMENT_AUTH_DISABLED)
    return "ENTITLEMENT_AUTH_TOKENS or ENTITLEMENT_AUTH_JWT_ISSUER is set but ENTITLEMENT_AUTH_DISABLED=true would ignore it: set only one of them";
  return undefined;
};

/** Fail closed: the console signs people in with API tokens, so it has nothing to check them against without tokens. */
const consoleNeedsTokens: Rule<EntitlementEnv> = (e) =>
  e.ENTITLEMENT_CONSOLE_ENABLED && e.ENTITLEMENT_AUTH_DISABLED
    ? "ENTITLEMENT_CONSOLE_ENABLED=true needs ENTITLEMENT_AUTH_TOKENS: the console is never served without authentication"
    : undefined;

/**
 * `requireAuth: false` is for the subcommands that never serve the API (migrate, operator tools): they need neither
 * tokens nor ENTITLEMENT_AUTH_DISABLED, though tokens that are set must still be valid.
 */
export function loadEntitlementConfig(
  env: Record<string, string | undefined>,
  options: { requireAuth?: boolean } = {},
) {
  const e = parseEnv(EntitlementEnv, env, [
    ...backoffRules("ENTITLEMENT_OUTBOX"),
    ...(schedulerRules as Rule<EntitlementEnv>[]),
    databaseUrlReadable,
    notGreater("ENTITLEMENT_REQUEST_QUEUE_TIMEOUT", "ENTITLEMENT_REQUEST_TIMEOUT"),
    tokensAreValid,
    ...(jwtRules as Rule<EntitlementEnv>[]),
    ...natsRules,
    ...(options.requireAuth === false ? [] : [tokensOrDisabled, consoleNeedsTokens]),
  ]);
  return {
    env: e,
    ...commonSettings(env, e),
    nats: {
      ...natsConnection(e),
      subject: e.ENTITLEMENT_NATS_SUBJECT,
      stream: e.ENTITLEMENT_NATS_STREAM,
      duplicateWindowMs: e.ENTITLEMENT_NATS_DUPLICATE_WINDOW,
      replicas: e.ENTITLEMENT_NATS_STREAM_REPLICAS,
    },
    idempotency: { ttlHours: e.ENTITLEMENT_IDEMPOTENCY_TTL_HOURS },
    outbox: outboxSettings(e),
    ...schedulerConfig(e),
    retention: {
      enabled: e.ENTITLEMENT_RETENTION_ENABLED,
      cleanupIntervalMs: e.ENTITLEMENT_RETENTION_CLEANUP_INTERVAL,
      publishedTtlMs: e.ENTITLEMENT_OUTBOX_PUBLISHED_TTL,
    },
    partitions: {
      intervalMs: e.ENTITLEMENT_PARTITION_MAINTENANCE_INTERVAL,
      monthsAhead: e.ENTITLEMENT_PARTITION_MONTHS_AHEAD,
      auditRetentionMs: e.ENTITLEMENT_AUDIT_RETENTION,
    },
    auth: {
      disabled: e.ENTITLEMENT_AUTH_DISABLED,
      tokens: parseTokenEntries(e.ENTITLEMENT_AUTH_TOKENS ?? "").entries,
      metricsPublic: e.ENTITLEMENT_METRICS_PUBLIC,
    },
    /** Undefined: no issuer, only static tokens. */
    jwt: jwtSettings(e),
    limits: {
      rateLimit: e.ENTITLEMENT_RATE_LIMIT_ENABLED
        ? { ratePerSecond: e.ENTITLEMENT_RATE_LIMIT_RPS, burst: e.ENTITLEMENT_RATE_LIMIT_BURST }
        : undefined,
      requestTimeoutMs: e.ENTITLEMENT_REQUEST_TIMEOUT,
      queueTimeoutMs: e.ENTITLEMENT_REQUEST_QUEUE_TIMEOUT,
    },
    console: { ...consoleSettings("ENTITLEMENT", e), undoWindowMs: e.ENTITLEMENT_CONSOLE_UNDO_WINDOW },
    tracing: { exportSpans: exportRequested(e) },
  };
}

function outboxSettings(e: EntitlementEnv) {
  return {
    enabled: e.ENTITLEMENT_OUTBOX_ENABLED && e.NATS_ENABLED,
    pollIntervalMs: e.ENTITLEMENT_OUTBOX_POLL_INTERVAL,
    idlePollIntervalMs: e.ENTITLEMENT_OUTBOX_IDLE_POLL_INTERVAL,
    batchSize: e.ENTITLEMENT_OUTBOX_BATCH_SIZE,
    maxBatchSize: e.ENTITLEMENT_OUTBOX_MAX_BATCH_SIZE,
    concurrency: e.ENTITLEMENT_OUTBOX_CONCURRENCY,
    maxAttempts: e.ENTITLEMENT_OUTBOX_MAX_ATTEMPTS,
    leaseMs: e.ENTITLEMENT_OUTBOX_LEASE,
    errorMessageMaxLength: e.ENTITLEMENT_OUTBOX_ERROR_MESSAGE_MAX_LENGTH,
    backoff: backoffPolicy("ENTITLEMENT_OUTBOX", e),
  };
}
/** Entitlement's secret variables, redacted from its logs. */
export const SECRET_VARIABLES = [...NATS_SECRET_VARIABLES] as const;

export type EntitlementConfig = ReturnType<typeof loadEntitlementConfig>;
