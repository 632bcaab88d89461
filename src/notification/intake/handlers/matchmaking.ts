// Matchmaking events (docs/events.md): one `MatchFound` notification per listed player, or, for an event
// that names none, a single notification for `matchmaking-system`.
import { fromBinary } from "@bufbuild/protobuf";
import {
  type MatchmakingEvent,
  MatchmakingEvent_EventType,
  MatchmakingEventSchema,
} from "../../../gen/matchmaking_event_pb.ts";
import type { DecodedEvent, EventHandler, NotificationDraft } from "../consumer/handler.ts";
import { decodeEvent, isPlainText } from "./fields.ts";

/** Who is notified of an event without players. */
export const MATCHMAKING_SYSTEM_USER = "matchmaking-system";

/** Players per event: a match of a few teams, with room to spare, and a bound on one event's transaction. */
export const MAX_PLAYERS = 100;

const TEXT_LIMITS = [
  ["match_id", "matchId", 1, 128],
  ["mode", "mode", 0, 64],
  ["trace_id", "traceId", 0, 128],
] as const;

function invalidField(event: MatchmakingEvent): string | undefined {
  for (const [name, key, min, max] of TEXT_LIMITS) if (!isPlainText(event[key], min, max)) return name;
  if (event.userIds.length > MAX_PLAYERS) return "user_ids (more than 100)";
  if (!event.userIds.every((id) => isPlainText(id, 1, 128))) return "user_ids";
  return undefined;
}

export function decodeMatchmakingEvent(body: Uint8Array): DecodedEvent {
  return decodeEvent("matchmaking", () => fromBinary(MatchmakingEventSchema, body), notificationsOf);
}

function notificationsOf(event: MatchmakingEvent): NotificationDraft[] | string {
  if (event.eventType !== MatchmakingEvent_EventType.MATCH_FOUND) {
    return `unknown matchmaking event_type ${event.eventType}`;
  }
  const invalid = invalidField(event);
  if (invalid) return `invalid matchmaking ${invalid}`;
  // A matchmaker may match a user with their own second ticket: one notification per player, not per ticket.
  const players = [...new Set(event.userIds)];
  const draft = (userId: string, payload: Record<string, unknown>): NotificationDraft => ({
    userId,
    type: "MatchFound",
    occurredAt: event.occurredAt,
    payload,
  });
  return players.length === 0
    ? [draft(MATCHMAKING_SYSTEM_USER, { match_id: event.matchId })]
    : players.map((id) => draft(id, { match_id: event.matchId, mode: event.mode, user_ids: players }));
}

export const matchmakingEvents: EventHandler = { source: "matchmaking", decode: decodeMatchmakingEvent };
