// The matchmaking ingest's backlog: MatchmakingEvents of two players each, published with Nats-Msg-Id as a matchmaker
// would, `window` in flight at a time, while Notification is stopped.
import { create, toBinary } from "@bufbuild/protobuf";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { MatchmakingEventSchema } from "../../src/gen/matchmaking_event_pb.ts";

/** Players per bench match: each event yields this many notifications. */
export const PLAYERS = 2;

function matchMessage(prefix: string, n: number) {
  const eventId = crypto.randomUUID();
  const body = toBinary(
    MatchmakingEventSchema,
    create(MatchmakingEventSchema, {
      eventId,
      occurredAt: new Date().toISOString(),
      matchId: `${prefix}-m${n}`,
      mode: "rank",
      traceId: eventId.replaceAll("-", ""),
      userIds: Array.from({ length: PLAYERS }, (_, p) => `${prefix}-${n}-p${p}`),
    }),
  );
  return { eventId, body };
}

export async function publishMatches(
  nc: NatsConnection,
  args: { subject: string; count: number; window: number; prefix: string },
): Promise<void> {
  const js = jetstream(nc);
  for (let first = 0; first < args.count; first += args.window) {
    const size = Math.min(args.window, args.count - first);
    await Promise.all(
      Array.from({ length: size }, (_, i) => {
        const m = matchMessage(args.prefix, first + i);
        return js.publish(args.subject, m.body, { msgID: m.eventId });
      }),
    );
  }
}
