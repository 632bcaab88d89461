// Stream, subject and durable names of both services for one stack or one test on a shared NATS, derived from one
// stream name and one durable name, so that neither creates the default streams or meets another's.

/** The environment of both services: Entitlement publishes where Notification consumes. */
export function pipelineNatsNames(stream: string, durable: string): Record<string, string> {
  const advisory = (kind: string) => `$JS.EVENT.ADVISORY.CONSUMER.${kind}.${stream}.${durable}`;
  return {
    ENTITLEMENT_NATS_STREAM: stream,
    ENTITLEMENT_NATS_SUBJECT: `${stream}.events`,
    ENTITLEMENT_POINTS_NATS_STREAM: `${stream}-points`,
    ENTITLEMENT_POINTS_NATS_SUBJECT: `${stream}.points`,
    NOTIFICATION_NATS_STREAM: stream,
    NOTIFICATION_NATS_SUBJECT: `${stream}.events`,
    NOTIFICATION_NATS_DURABLE: durable,
    NOTIFICATION_NATS_ADVISORY_SUBJECT: advisory("MAX_DELIVERIES"),
    NOTIFICATION_NATS_ADVISORY_STREAM: `${stream}-max-deliveries`,
    NOTIFICATION_NATS_ADVISORY_DURABLE: `${durable}-max-deliveries`,
    NOTIFICATION_NATS_TERMINATED_ADVISORY_SUBJECT: advisory("MSG_TERMINATED"),
    NOTIFICATION_NATS_TERMINATED_ADVISORY_STREAM: `${stream}-terminated`,
    NOTIFICATION_NATS_TERMINATED_ADVISORY_DURABLE: `${durable}-terminated`,
    NOTIFICATION_MATCHMAKING_NATS_STREAM: `${stream}-matches`,
    NOTIFICATION_MATCHMAKING_NATS_SUBJECT: `${stream}.matches`,
    NOTIFICATION_MATCHMAKING_NATS_DURABLE: `${durable}-matches`,
    NOTIFICATION_POINTS_NATS_STREAM: `${stream}-points`,
    NOTIFICATION_POINTS_NATS_SUBJECT: `${stream}.points`,
    NOTIFICATION_POINTS_NATS_DURABLE: `${durable}-points`,
  };
}

/** Every stream those names make the services create: what a test or `bun run stack --reset` deletes. */
export const pipelineStreams = (stream: string): string[] =>
  ["", "-max-deliveries", "-terminated", "-matches", "-points"].map((suffix) => `${stream}${suffix}`);
