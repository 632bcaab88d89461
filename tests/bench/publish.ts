// Raw JetStream publishing with the services' own client library: protobuf EntitlementEvents with the relay's headers
// and Nats-Msg-Id, `window` publishes in flight at a time. It is the yardstick of the relay drain and fills the
// notification's stream for the ingest phase.
import { create, toBinary } from "@bufbuild/protobuf";
import { jetstream } from "@nats-io/jetstream";
import { type NatsConnection, headers as natsHeaders } from "@nats-io/transport-node";
import { EntitlementEvent_EventType, EntitlementEventSchema } from "../../src/gen/entitlement_event_pb.ts";

function eventMessage(prefix: string, n: number) {
  const eventId = crypto.randomUUID();
  const occurredAt = new Date().toISOString();
  const userId = `${prefix}-${n}`;
  const body = toBinary(
    EntitlementEventSchema,
    create(EntitlementEventSchema, {
      eventId,
      eventType: EntitlementEvent_EventType.ENTITLEMENT_GRANTED,
      occurredAt,
      userId,
      stockKeepingUnit: "sku-raw",
      source: "bench",
      sourceId: `p-${n}`,
      version: 0n,
      traceId: eventId.replaceAll("-", ""),
    }),
  );
  const h = natsHeaders();
  h.set("event_type", "EntitlementGranted");
  h.set("aggregate_key", `${userId}:sku-raw`);
  h.set("occurred_at", occurredAt);
  h.set("trace_id", eventId.replaceAll("-", ""));
  return { eventId, body, headers: h };
}

/** Publishes `count` events and returns the seconds it took (encoding included, as the relay encodes too). */
export async function publishEvents(
  nc: NatsConnection,
  args: { subject: string; count: number; window: number; prefix: string },
): Promise<number> {
  const js = jetstream(nc);
  const started = performance.now();
  for (let first = 0; first < args.count; first += args.window) {
    const size = Math.min(args.window, args.count - first);
    await Promise.all(
      Array.from({ length: size }, (_, i) => {
        const m = eventMessage(args.prefix, first + i);
        return js.publish(args.subject, m.body, { msgID: m.eventId, headers: m.headers });
      }),
    );
  }
  return (performance.now() - started) / 1000;
}
