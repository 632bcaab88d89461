// The configuration every event consumer of this service has: one
// function declares its variables under a prefix, one reads them back as the settings the consumer loop takes.
import { Bool, Duration, Int, NonBlank } from "../../../shared/config.ts";
import type { AdvisoryKind } from "../advisories/parse.ts";

/** Where one consumer reads and how; `advisorySubjects` are the subjects JetStream reports its given-up messages on. */
export type ConsumerSettings = {
  stream: string;
  subject: string;
  durable: string;
  /** Used only when this service has to create the stream. */
  duplicateWindowMs: number;
  /** Replicas of the stream when this service creates it. */
  replicas: number;
  ackWaitMs: number;
  maxDeliver: number;
  advisorySubjects: Record<AdvisoryKind, string>;
};

/** The subject JetStream publishes a consumer's advisory on: it names the stream and the durable being watched. */
export const advisorySubject = (kind: AdvisoryKind, stream: string, durable: string) =>
  `$JS.EVENT.ADVISORY.CONSUMER.${kind}.${stream}.${durable}`;

/**
 * The ack wait of every durable this service reads. Short, because it is how long the messages a killed process held
 * wait before they are redelivered: with 10 s a kill -9 of Notification under 50 grants/s left the slowest grant
 * 10.1 s from commit to SENT. A message in hand is kept in progress (nats/in-hand.ts), so no batch, however slow,
 * is redelivered while its process lives. The durable is set to the configured value at every start.
 */
export const ACK_WAIT = "3s";
export const ACK_WAIT_DESCRIPTION = (consumer: string) =>
  `Ack wait of ${consumer}: how long the messages of a process that died wait before they are redelivered (a ` +
  "message in hand is kept in progress however long it takes). Applied to the durable at every start.";

type TextKey<P extends string> = `${P}_SUBJECT` | `${P}_STREAM` | `${P}_DURABLE`;
type DurationKey<P extends string> = `${P}_DUPLICATE_WINDOW` | `${P}_ACK_WAIT`;
export type ConsumerValues<P extends string> = Record<TextKey<P>, string> &
  Record<DurationKey<P>, number> &
  Record<`${P}_MAX_DELIVER`, number> &
  Record<`${P}_ENABLED`, boolean>;

/**
 * The seven variables of one consumer: `<P>_ENABLED`, `_SUBJECT`, `_STREAM`, `_DURABLE`, `_DUPLICATE_WINDOW`,
 * `_ACK_WAIT`, `_MAX_DELIVER`, with the entitlement consumer's defaults. `events` names the events in the descriptions.
 */
export function consumerVariables<P extends string>(
  prefix: P,
  defaults: { subject: string; stream: string; durable: string; events: string },
) {
  const { events } = defaults;
  return {
    [`${prefix}_ENABLED`]: Bool(true, { description: `Consume ${events} (false: the consumer is not started).` }),
    [`${prefix}_SUBJECT`]: NonBlank(defaults.subject, { description: `Subject of the ${events}.` }),
    [`${prefix}_STREAM`]: NonBlank(defaults.stream, {
      description: `Stream of the ${events}; created when missing, never changed.`,
    }),
    [`${prefix}_DURABLE`]: NonBlank(defaults.durable, { description: `Durable consumer of the ${events}.` }),
    [`${prefix}_DUPLICATE_WINDOW`]: Duration("2m", {
      minimum: 1,
      description: `Duplicate window of the ${events} stream, used only when this service creates it.`,
    }),
    [`${prefix}_ACK_WAIT`]: Duration(ACK_WAIT, {
      minimum: 1,
      description: ACK_WAIT_DESCRIPTION(`the ${events} consumer`),
    }),
    [`${prefix}_MAX_DELIVER`]: Int(10, { minimum: 1, description: `Max deliver of the ${events} consumer.` }),
  } as Record<TextKey<P>, ReturnType<typeof NonBlank>> &
    Record<DurationKey<P>, ReturnType<typeof Duration>> &
    Record<`${P}_MAX_DELIVER`, ReturnType<typeof Int>> &
    Record<`${P}_ENABLED`, ReturnType<typeof Bool>>;
}

/** The parsed variables of `prefix` as settings, or undefined when the consumer is switched off. */
export function consumerSettings<P extends string>(
  prefix: P,
  e: ConsumerValues<P>,
  replicas: number,
): ConsumerSettings | undefined {
  const get = <T>(name: string) => (e as unknown as Record<string, T>)[`${prefix}_${name}`] as T;
  if (!get<boolean>("ENABLED")) return undefined;
  const stream = get<string>("STREAM");
  const durable = get<string>("DURABLE");
  return {
    stream,
    subject: get<string>("SUBJECT"),
    durable,
    duplicateWindowMs: get<number>("DUPLICATE_WINDOW"),
    replicas,
    ackWaitMs: get<number>("ACK_WAIT"),
    maxDeliver: get<number>("MAX_DELIVER"),
    advisorySubjects: {
      MAX_DELIVERIES: advisorySubject("MAX_DELIVERIES", stream, durable),
      MSG_TERMINATED: advisorySubject("MSG_TERMINATED", stream, durable),
    },
  };
}
