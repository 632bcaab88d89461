// The matchmaking handler (the cases of the Java original's handler tests, with this system's players): what one event yields, and which events can never be stored and so are terminated.
import { describe, expect, test } from "bun:test";
import { MatchmakingEvent_EventType } from "../../src/gen/matchmaking_event_pb.ts";
import { decodeMatchmakingEvent, MATCHMAKING_SYSTEM_USER } from "../../src/notification/intake/handlers/matchmaking.ts";
import { matchBytes } from "./helpers.ts";

const rejected = (reason: string) => ({ ok: false as const, reason });

describe("decodeMatchmakingEvent", () => {
  test("an event with players yields one MatchFound per player, payload {match_id, mode, user_ids}", () => {
    const eventId = crypto.randomUUID();
    const occurredAt = "2026-01-08T07:10:00.123Z";
    const decoded = decodeMatchmakingEvent(
      matchBytes({ eventId, occurredAt, matchId: "m-1", mode: "casual", userIds: ["alice", "bob"] }),
    );
    const payload = { match_id: "m-1", mode: "casual", user_ids: ["alice", "bob"] };
    expect(decoded).toEqual({
      ok: true,
      event: {
        eventId,
        notifications: [
          { userId: "alice", type: "MatchFound", occurredAt, payload },
          { userId: "bob", type: "MatchFound", occurredAt, payload },
        ],
      },
    });
  });

  test("an event without players (the original's) yields one notification for matchmaking-system, payload only match_id (90)", () => {
    const decoded = decodeMatchmakingEvent(matchBytes({ matchId: "m-2", mode: "rank" }));
    expect(decoded.ok && decoded.event.notifications).toEqual([
      {
        userId: MATCHMAKING_SYSTEM_USER,
        type: "MatchFound",
        occurredAt: expect.any(String),
        payload: { match_id: "m-2" },
      },
    ]);
  });

  test("a player listed twice (two tickets of one user) is notified once", () => {
    const decoded = decodeMatchmakingEvent(matchBytes({ userIds: ["carol", "carol", "dave"] }));
    expect(decoded.ok && decoded.event.notifications.map((n) => n.userId)).toEqual(["carol", "dave"]);
    expect(decoded.ok && decoded.event.notifications[0]?.payload.user_ids).toEqual(["carol", "dave"]);
  });

  test("the event id is the deduplication key, lower-cased like PostgreSQL prints it", () => {
    const decoded = decodeMatchmakingEvent(matchBytes({ eventId: "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11" }));
    expect(decoded.ok && decoded.event.eventId).toBe("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
  });

  test('event_id "bad-id" is permanent: "invalid matchmaking event_id" (91)', () => {
    expect(decodeMatchmakingEvent(matchBytes({ eventId: "bad-id" }))).toEqual(rejected("invalid matchmaking event_id"));
  });

  test('occurred_at "bad-time" is permanent: "invalid matchmaking occurred_at" (92)', () => {
    expect(decodeMatchmakingEvent(matchBytes({ occurredAt: "bad-time" }))).toEqual(
      rejected("invalid matchmaking occurred_at"),
    );
    expect(decodeMatchmakingEvent(matchBytes({ occurredAt: "2026-01-08T07:10:00+18:00" })).ok).toBe(false);
  });

  test("undecodable bytes are permanent (the subscriber's termWhenPayloadParseFails, 67)", () => {
    expect(decodeMatchmakingEvent(new Uint8Array([0x80]))).toEqual(rejected("undecodable matchmaking event"));
  });

  // The Java original's case of a payload that cannot be serialized cannot happen here: the payload is strings only.
  // Its intent, "what can never be stored is permanent", is these cases: each would fail the insert forever.
  test.each([
    ["a blank match_id", { matchId: "  " }, "invalid matchmaking match_id"],
    ["an empty match_id", { matchId: "" }, "invalid matchmaking match_id"],
    ["a match_id of 129 characters", { matchId: "m".repeat(129) }, "invalid matchmaking match_id"],
    ["a control character in match_id", { matchId: "m\u001b[2J" }, "invalid matchmaking match_id"],
    ["NUL in mode", { mode: "ra\u0000nk" }, "invalid matchmaking mode"],
    ["a mode of 65 characters", { mode: "x".repeat(65) }, "invalid matchmaking mode"],
    ["a newline in trace_id", { traceId: "t\n1" }, "invalid matchmaking trace_id"],
    [
      "101 players",
      { userIds: Array.from({ length: 101 }, (_, i) => `p${i}`) },
      "invalid matchmaking user_ids (more than 100)",
    ],
    ["a blank player", { userIds: ["alice", " "] }, "invalid matchmaking user_ids"],
    ["a player id of 129 characters", { userIds: ["u".repeat(129)] }, "invalid matchmaking user_ids"],
    ["a control character in a player id", { userIds: ["bob\u0007"] }, "invalid matchmaking user_ids"],
    ["an unknown event_type", { eventType: 7 as MatchmakingEvent_EventType }, "unknown matchmaking event_type 7"],
  ])("%s is permanent", (_, fields, reason) => {
    expect(decodeMatchmakingEvent(matchBytes(fields))).toEqual(rejected(reason));
  });

  test("the limits themselves are accepted: 100 players of 128 characters, a 128-character match_id", () => {
    const userIds = Array.from({ length: 100 }, (_, i) => `${i}`.padEnd(128, "u"));
    const decoded = decodeMatchmakingEvent(matchBytes({ userIds, matchId: "m".repeat(128), mode: "" }));
    expect(decoded.ok && decoded.event.notifications).toHaveLength(100);
    expect(MatchmakingEvent_EventType.MATCH_FOUND).toBe(0);
  });
});
