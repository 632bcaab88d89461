// Every kind of event this service consumes, each with the consumer it reads through. One consumer loop runs per
// entry (consumer/worker.ts); a kind switched off in the configuration is left out.
import type { AdvisoryKind } from "../advisories/parse.ts";
import type { EventPipeline } from "../consumer/handler.ts";
import type { ConsumerSettings } from "../consumer/settings.ts";
import { entitlementEvents } from "./entitlement.ts";
import { matchmakingEvents } from "./matchmaking.ts";
import { pointsEvents } from "./points.ts";

/**
 * What the configuration says of the consumers (config.ts's `nats`): the entitlement consumer's settings kept flat,
 * the advisory subjects, and the other consumers, undefined when switched off.
 */
export type IntakeSettings = Omit<ConsumerSettings, "advisorySubjects"> & {
  advisories: { kind: AdvisoryKind; subject: string }[];
  matchmaking?: ConsumerSettings;
  points?: ConsumerSettings;
};

/** The entitlement consumer's settings, kept flat in the configuration (NOTIFICATION_NATS_*). */
function entitlementConsumer(nats: IntakeSettings): ConsumerSettings {
  const { stream, subject, durable, duplicateWindowMs, replicas, ackWaitMs, maxDeliver } = nats;
  const advisory = (kind: "MAX_DELIVERIES" | "MSG_TERMINATED") =>
    nats.advisories.find((a) => a.kind === kind)?.subject ?? "";
  return {
    stream,
    subject,
    durable,
    duplicateWindowMs,
    replicas,
    ackWaitMs,
    maxDeliver,
    advisorySubjects: { MAX_DELIVERIES: advisory("MAX_DELIVERIES"), MSG_TERMINATED: advisory("MSG_TERMINATED") },
  };
}

export function eventPipelines(nats: IntakeSettings): EventPipeline[] {
  const pipelines: { handler: EventPipeline["handler"]; consumer: ConsumerSettings | undefined }[] = [
    { handler: entitlementEvents, consumer: entitlementConsumer(nats) },
    { handler: matchmakingEvents, consumer: nats.matchmaking },
    { handler: pointsEvents, consumer: nats.points },
  ];
  return pipelines.filter((p): p is EventPipeline => p.consumer !== undefined);
}
