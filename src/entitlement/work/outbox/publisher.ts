// Publishes a batch of encoded events to JetStream at once and waits for all the PubAcks together: one round trip
// for the batch instead of one per event. A duplicate PubAck (the stream already holds that Nats-Msg-Id) is a success.
import type { JetStreamClient } from "@nats-io/jetstream";
import { MsgHdrsImpl } from "@nats-io/transport-node";
import { SpanKind } from "@opentelemetry/api";
import type { Clock } from "../../../shared/runtime.ts";
import { contextOfTraceparent, inSpan, traceparentOf } from "../../../shared/trace-context.ts";
import type { EncodedEvent } from "./encode.ts";

/** The one JetStream call the relay makes; tests wrap it to inject failures or delays. */
export type Publisher = Pick<JetStreamClient, "publish">;

export type PublishOutcome =
  | { event: EncodedEvent; ok: true; ackedAt: Date; duplicate: boolean }
  | { event: EncodedEvent; ok: false; error: unknown };

const publishAttributes = (event: EncodedEvent) => ({
  "messaging.system": "nats",
  "messaging.message.id": event.eventId,
  "entitlement.event_type": event.headers.event_type,
});

export async function publishEvents(
  js: Publisher,
  /** `subject` is for events that carry none of their own (entitlement events). */
  args: { subject: string; events: EncodedEvent[]; now: Clock; timeoutMs?: number },
): Promise<PublishOutcome[]> {
  const settled = await Promise.allSettled(
    args.events.map((event) =>
      // One span per event, continuing the command's trace from the outbox row; its traceparent travels in the header.
      inSpan(
        `${event.subject ?? args.subject} publish`,
        {
          kind: SpanKind.PRODUCER,
          parent: contextOfTraceparent(event.traceparent),
          attributes: publishAttributes(event),
        },
        async () => {
          // The headers' map is built at once: MsgHdrs' `append` canonicalises each key and scans the keys already there.
          const traceparent = traceparentOf();
          const h = MsgHdrsImpl.fromRecord({
            "Nats-Msg-Id": [event.eventId],
            event_type: [event.headers.event_type],
            aggregate_key: [event.headers.aggregate_key],
            occurred_at: [event.headers.occurred_at],
            trace_id: [event.headers.trace_id],
            ...(traceparent ? { traceparent: [traceparent] } : {}),
          });
          const ack = await js.publish(event.subject ?? args.subject, event.body, {
            msgID: event.eventId,
            headers: h,
            ...(args.timeoutMs ? { timeout: args.timeoutMs } : {}),
          });
          if (!ack) throw new Error("puback is missing");
          return { ackedAt: args.now(), duplicate: ack.duplicate };
        },
      ),
    ),
  );
  return settled.map((s, i) => {
    const event = args.events[i] as EncodedEvent;
    return s.status === "fulfilled"
      ? { event, ok: true, ackedAt: s.value.ackedAt, duplicate: s.value.duplicate }
      : { event, ok: false, error: s.reason };
  });
}
