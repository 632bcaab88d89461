// Notification configuration: every setting is an environment variable (docs/configuration.md), the delivery
// channels' included. Each event consumer beyond the entitlement one declares its variables with
// consumerVariables.
import { type Static, Type } from "@sinclair/typebox";
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
  OneOf,
  Optional,
  parseEnv,
  type Rule,
  retryVariables,
  ServerPortAlias,
  Str,
} from "../shared/config.ts";
import { consoleSettings, consoleVariables } from "../shared/console/config.ts";
import { NATS_SECRET_VARIABLES, natsConnection, natsRules, natsVariables } from "../shared/nats-security.ts";
import { exportRequested } from "../shared/tracing.ts";
import { EndpointVariables, endpointRules, endpointSettings } from "./features/endpoints/settings.ts";
import { PlayerEnv, playerRules, playerSettings } from "./features/players/config.ts";
import { PushVariables, pushRules, pushSettings } from "./features/push/settings.ts";
import {
  ACK_WAIT,
  ACK_WAIT_DESCRIPTION,
  advisorySubject,
  consumerSettings,
  consumerVariables,
} from "./intake/consumer/settings.ts";

/** The matchmaking consumer's variables. */
const MATCHMAKING = "NOTIFICATION_MATCHMAKING_NATS";
/** The points events Entitlement publishes (docs/events.md), in the stream Entitlement creates and owns. */
const POINTS = "NOTIFICATION_POINTS_NATS";
/** The operator's inbox prefix when NATS_INBOX_PREFIX is unset: the notification-ops user's in least-privilege.conf. */
const OPS_INBOX_PREFIX = "_INBOX_notification_ops";

export const NotificationEnv = Type.Object({
  ...CommonConfig,
  ...natsVariables(
    "_INBOX_notification",
    " Unset, the operator's `notification nats-dlq replay` uses _INBOX_notification_ops (the notification-ops user's).",
  ),
  ...ServerPortAlias,
  PORT: Int(8081, { minimum: 0, maximum: 65535, description: "HTTP port of the Notification service." }),
  NOTIFICATION_DELIVERY_ENABLED: Bool(true, { description: "Run the delivery worker in this process." }),
  NOTIFICATION_DELIVERY_POLL_INTERVAL: Duration("1s", {
    minimum: 1,
    description: "Safety-net poll of the delivery worker (new notifications are delivered at once).",
  }),
  NOTIFICATION_DELIVERY_IDLE_POLL_INTERVAL: Duration("10s", {
    minimum: 1,
    description:
      "Longest sleep of an idle delivery worker: it wakes for notifications this process stores, for the next " +
      "scheduled retry or expiring lease, and otherwise after this long (rows another process makes due, such as " +
      "a requeue, wait up to it). At most NOTIFICATION_DELIVERY_POLL_INTERVAL: a fixed poll.",
  }),
  NOTIFICATION_DELIVERY_BATCH_SIZE: Int(50, {
    minimum: 1,
    maximum: 10000,
    description: "Most notifications one worker claims at once and has in flight (each delivery runs on its own).",
  }),
  ...retryVariables("NOTIFICATION_DELIVERY", {
    attempts: "Send attempts before FAILED + DLQ.",
    errorMessage: "DLQ error_message and last_error are cut to this many characters.",
  }),
  NOTIFICATION_DELIVERY_LEASE: Duration("30s", {
    minimum: 1,
    description: "How long a claim is held before another worker may take it over.",
  }),
  NOTIFICATION_DELIVERY_CHANNEL: OneOf(["log", "webhook"] as const, "log", {
    description: "log: one structured log line per delivery; webhook: a signed POST to NOTIFICATION_WEBHOOK_URL.",
  }),
  NOTIFICATION_DELIVERY_FAILURE_INJECTION_ENABLED: Bool(false, {
    description: "Drills only: make deliveries to matching user ids fail (a warning is logged at start).",
  }),
  NOTIFICATION_DELIVERY_FAILURE_INJECTION_USER_ID_PREFIX: Str("", {
    description: "User-id prefix that failure injection matches; blank disables it.",
  }),
  NOTIFICATION_WEBHOOK_URL: Optional({
    description: "Webhook endpoint (http or https); required for the webhook channel.",
  }),
  NOTIFICATION_WEBHOOK_SECRET: Optional({
    description: "Standard Webhooks signing secret, whsec_<base64>; required for the webhook channel.",
  }),
  NOTIFICATION_WEBHOOK_TIMEOUT: Duration("5s", { minimum: 1, description: "Timeout of one webhook request." }),
  NOTIFICATION_RETENTION_ENABLED: Bool(true, {
    description: "Delete old SENT/FAILED notifications and processed events.",
  }),
  NOTIFICATION_RETENTION_RETENTION_DAYS: Int(30, { minimum: 1, description: "Age after which rows are deleted." }),
  NOTIFICATION_RETENTION_CLEANUP_INTERVAL: Duration("1h", { minimum: 1, description: "How often retention runs." }),
  NOTIFICATION_NATS_SUBJECT: NonBlank("entitlement.events", { description: "Subject the consumer filters on." }),
  NOTIFICATION_NATS_STREAM: NonBlank("entitlement-events", {
    description: "Stream read (created only when missing, never changed).",
  }),
  NOTIFICATION_NATS_DURABLE: NonBlank("notification-entitlement-consumer", { description: "Durable consumer name." }),
  NOTIFICATION_NATS_DUPLICATE_WINDOW: Duration("2m", {
    minimum: 1,
    description: "Duplicate window used only when this service has to create the stream.",
  }),
  NOTIFICATION_NATS_STREAM_REPLICAS: Int(1, {
    minimum: 1,
    maximum: 5,
    description:
      "Replicas of every stream this service creates: the entitlement, matchmaking and points streams when they are " +
      "missing and the advisory streams, which are also put back to it at every start (3 on a 3-node cluster). Consumers follow their stream.",
  }),
  NOTIFICATION_NATS_ACK_WAIT: Duration(ACK_WAIT, { minimum: 1, description: ACK_WAIT_DESCRIPTION("the consumer") }),
  NOTIFICATION_NATS_MAX_DELIVER: Int(10, { minimum: 1, description: "Consumer max deliver." }),
  NOTIFICATION_NATS_ADVISORY_SUBJECT: Optional({
    pattern: "\\S",
    description:
      "MAX_DELIVERIES advisory subject of the consumer (default: derived from the stream and durable names, " +
      "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<durable>).",
  }),
  NOTIFICATION_NATS_ADVISORY_STREAM: NonBlank("notification-advisory-dlq", {
    description: "Stream capturing MAX_DELIVERIES advisories.",
  }),
  NOTIFICATION_NATS_ADVISORY_DURABLE: NonBlank("notification-advisory-consumer", {
    description: "Durable reading MAX_DELIVERIES advisories.",
  }),
  NOTIFICATION_NATS_TERMINATED_ADVISORY_SUBJECT: Optional({
    pattern: "\\S",
    description:
      "MSG_TERMINATED advisory subject of the consumer (default: derived from the stream and durable names, " +
      "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.<stream>.<durable>).",
  }),
  NOTIFICATION_NATS_TERMINATED_ADVISORY_STREAM: NonBlank("notification-terminated-advisory-dlq", {
    description: "Stream capturing MSG_TERMINATED advisories.",
  }),
  NOTIFICATION_NATS_TERMINATED_ADVISORY_DURABLE: NonBlank("notification-terminated-advisory-consumer", {
    description: "Durable reading MSG_TERMINATED advisories.",
  }),
  ...consumerVariables(MATCHMAKING, {
    subject: "matchmaking.events",
    stream: "matchmaking-events",
    durable: "notification-matchmaking-consumer",
    events: "matchmaking events",
  }),
  ...consumerVariables(POINTS, {
    subject: "points.events",
    stream: "points-events",
    durable: "notification-points-consumer",
    events: "points events",
  }),
  NOTIFICATION_DEBUG_API_ENABLED: Bool(false, { description: "Serve GET /debug/notification/inbox/{user_id}." }),
  NOTIFICATION_DEBUG_API_TOKEN: Optional({
    description:
      "Bearer token the debug inbox and the console require; at least 16 characters, required when either is enabled.",
  }),
  ...consoleVariables("NOTIFICATION", "NOTIFICATION_DEBUG_API_TOKEN"),
  ...EndpointVariables,
  ...PlayerEnv,
  ...PushVariables,
});
export type NotificationEnv = Static<typeof NotificationEnv>;

const webhookNeedsUrlAndSecret: Rule<NotificationEnv> = (e) => {
  if (e.NOTIFICATION_DELIVERY_CHANNEL !== "webhook") return undefined;
  if (!e.NOTIFICATION_WEBHOOK_URL || !/^https?:\/\/\S+$/.test(e.NOTIFICATION_WEBHOOK_URL))
    return "NOTIFICATION_WEBHOOK_URL must be an http(s) URL when NOTIFICATION_DELIVERY_CHANNEL=webhook";
  if (!e.NOTIFICATION_WEBHOOK_SECRET || !/^whsec_[A-Za-z0-9+/=]{16,}$/.test(e.NOTIFICATION_WEBHOOK_SECRET))
    return "NOTIFICATION_WEBHOOK_SECRET must be whsec_<base64> when NOTIFICATION_DELIVERY_CHANNEL=webhook";
  return undefined;
};

/** Fail closed: the inbox shows every user's notifications, so it is never served without a token. */
const debugApiNeedsToken: Rule<NotificationEnv> = (e) => {
  const token = e.NOTIFICATION_DEBUG_API_TOKEN;
  if (e.NOTIFICATION_DEBUG_API_ENABLED && (!token || token.trim().length < 16))
    return "NOTIFICATION_DEBUG_API_TOKEN must be set (at least 16 characters) when NOTIFICATION_DEBUG_API_ENABLED=true";
  return undefined;
};

/** Fail closed as the debug inbox does: the console shows every user's notifications and requeues deliveries. */
const consoleNeedsToken: Rule<NotificationEnv> = (e) => {
  const token = e.NOTIFICATION_DEBUG_API_TOKEN;
  if (e.NOTIFICATION_CONSOLE_ENABLED && (!token || token.trim().length < 16))
    return "NOTIFICATION_DEBUG_API_TOKEN must be set (at least 16 characters) when NOTIFICATION_CONSOLE_ENABLED=true";
  return undefined;
};

/** Each consumer reads its own stream: the entitlement stream has only the entitlement subject (docs/decisions.md). */
const streamsDiffer: Rule<NotificationEnv> = (e) => {
  const streams = [[e.NOTIFICATION_NATS_STREAM, "NOTIFICATION_NATS_STREAM"]];
  if (e.NOTIFICATION_MATCHMAKING_NATS_ENABLED) {
    streams.push([e.NOTIFICATION_MATCHMAKING_NATS_STREAM, "NOTIFICATION_MATCHMAKING_NATS_STREAM"]);
  }
  if (e.NOTIFICATION_POINTS_NATS_ENABLED)
    streams.push([e.NOTIFICATION_POINTS_NATS_STREAM, "NOTIFICATION_POINTS_NATS_STREAM"]);
  for (const [i, [stream, name]] of streams.entries()) {
    const earlier = streams.slice(0, i).find(([s]) => s === stream);
    if (earlier) return `${name}=${stream} must differ from ${earlier[1]}`;
  }
  return undefined;
};

export function loadNotificationConfig(env: Record<string, string | undefined>) {
  const e = parseEnv(NotificationEnv, env, [
    ...backoffRules("NOTIFICATION_DELIVERY"),
    databaseUrlReadable,
    webhookNeedsUrlAndSecret,
    debugApiNeedsToken,
    consoleNeedsToken,
    ...natsRules,
    streamsDiffer,
    ...(endpointRules as Rule<NotificationEnv>[]),
    ...(playerRules as Rule<NotificationEnv>[]),
    ...backoffRules("NOTIFICATION_PUSH"),
    ...(pushRules as Rule<NotificationEnv>[]),
  ]);
  return {
    env: e,
    ...commonSettings(env, e),
    nats: {
      ...natsConnection(e),
      /** The inbox prefix of `nats-dlq replay`, which connects as another user (notification-ops) than the service. */
      opsInboxPrefix: env.NATS_INBOX_PREFIX ? e.NATS_INBOX_PREFIX : OPS_INBOX_PREFIX,
      subject: e.NOTIFICATION_NATS_SUBJECT,
      stream: e.NOTIFICATION_NATS_STREAM,
      durable: e.NOTIFICATION_NATS_DURABLE,
      duplicateWindowMs: e.NOTIFICATION_NATS_DUPLICATE_WINDOW,
      replicas: e.NOTIFICATION_NATS_STREAM_REPLICAS,
      ackWaitMs: e.NOTIFICATION_NATS_ACK_WAIT,
      maxDeliver: e.NOTIFICATION_NATS_MAX_DELIVER,
      /** Undefined when NOTIFICATION_MATCHMAKING_NATS_ENABLED=false. */
      matchmaking: consumerSettings(MATCHMAKING, e, e.NOTIFICATION_NATS_STREAM_REPLICAS),
      /** Undefined when NOTIFICATION_POINTS_NATS_ENABLED=false. */
      points: consumerSettings(POINTS, e, e.NOTIFICATION_NATS_STREAM_REPLICAS),
      advisories: advisorySettings(e),
    },
    delivery: deliverySettings(e),
    retention: {
      enabled: e.NOTIFICATION_RETENTION_ENABLED,
      retentionDays: e.NOTIFICATION_RETENTION_RETENTION_DAYS,
      cleanupIntervalMs: e.NOTIFICATION_RETENTION_CLEANUP_INTERVAL,
    },
    debugApi: { enabled: e.NOTIFICATION_DEBUG_API_ENABLED, token: e.NOTIFICATION_DEBUG_API_TOKEN },
    endpoints: endpointSettings(e),
    console: consoleSettings("NOTIFICATION", e),
    players: playerSettings(e),
    push: pushSettings(e),
    tracing: { exportSpans: exportRequested(e) },
  };
}

/** One advisory stream and durable per kind, each watching the advisory subject of every event consumer. */
function advisorySettings(e: NotificationEnv) {
  return [
    {
      kind: "MAX_DELIVERIES" as const,
      subject:
        e.NOTIFICATION_NATS_ADVISORY_SUBJECT ??
        advisorySubject("MAX_DELIVERIES", e.NOTIFICATION_NATS_STREAM, e.NOTIFICATION_NATS_DURABLE),
      stream: e.NOTIFICATION_NATS_ADVISORY_STREAM,
      durable: e.NOTIFICATION_NATS_ADVISORY_DURABLE,
      replicas: e.NOTIFICATION_NATS_STREAM_REPLICAS,
    },
    {
      kind: "MSG_TERMINATED" as const,
      subject:
        e.NOTIFICATION_NATS_TERMINATED_ADVISORY_SUBJECT ??
        advisorySubject("MSG_TERMINATED", e.NOTIFICATION_NATS_STREAM, e.NOTIFICATION_NATS_DURABLE),
      stream: e.NOTIFICATION_NATS_TERMINATED_ADVISORY_STREAM,
      durable: e.NOTIFICATION_NATS_TERMINATED_ADVISORY_DURABLE,
      replicas: e.NOTIFICATION_NATS_STREAM_REPLICAS,
    },
  ];
}

function deliverySettings(e: NotificationEnv) {
  return {
    enabled: e.NOTIFICATION_DELIVERY_ENABLED,
    pollIntervalMs: e.NOTIFICATION_DELIVERY_POLL_INTERVAL,
    idlePollMs: e.NOTIFICATION_DELIVERY_IDLE_POLL_INTERVAL,
    batchSize: e.NOTIFICATION_DELIVERY_BATCH_SIZE,
    maxAttempts: e.NOTIFICATION_DELIVERY_MAX_ATTEMPTS,
    leaseMs: e.NOTIFICATION_DELIVERY_LEASE,
    errorMessageMaxLength: e.NOTIFICATION_DELIVERY_ERROR_MESSAGE_MAX_LENGTH,
    backoff: backoffPolicy("NOTIFICATION_DELIVERY", e),
    channel: e.NOTIFICATION_DELIVERY_CHANNEL,
    failureInjection: {
      enabled: e.NOTIFICATION_DELIVERY_FAILURE_INJECTION_ENABLED,
      userIdPrefix: e.NOTIFICATION_DELIVERY_FAILURE_INJECTION_USER_ID_PREFIX,
    },
    webhook: {
      url: e.NOTIFICATION_WEBHOOK_URL,
      secret: e.NOTIFICATION_WEBHOOK_SECRET,
      timeoutMs: e.NOTIFICATION_WEBHOOK_TIMEOUT,
    },
  };
}
export type NotificationConfig = ReturnType<typeof loadNotificationConfig>;

/** Variables whose values are secrets: redacted from every log line, wherever a configuration object ends up. */
export const SECRET_VARIABLES = [
  "NOTIFICATION_WEBHOOK_SECRET",
  "NOTIFICATION_DEBUG_API_TOKEN",
  "NOTIFICATION_ENDPOINT_SECRET_KEY",
  "NOTIFICATION_ENDPOINT_PREVIOUS_SECRET_KEYS",
  "NOTIFICATION_WEBPUSH_VAPID_PRIVATE_KEY",
  ...NATS_SECRET_VARIABLES,
] as const;
