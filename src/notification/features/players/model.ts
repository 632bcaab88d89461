// The players' API shapes: one schema each for validation, types and OpenAPI.
import { type Static, Type } from "@sinclair/typebox";
import { DOCUMENTED_AS } from "../../../shared/http/openapi-refine.ts";

export const LIST_DEFAULT = 20;
export const LIST_MAX = 100;
export const READ_IDS_MAX = 100;
/** The largest seq a client can name: seqs are JSON numbers, exact up to 2^53 − 1. */
export const MAX_SEQ = Number.MAX_SAFE_INTEGER;

export const PlayerNotification = Type.Object(
  {
    notification_id: Type.String({ format: "uuid" }),
    seq: Type.Integer({ minimum: 1, description: "The player's own sequence: 1, 2, 3, … in the order stored." }),
    type: Type.String({ examples: ["EntitlementGranted"] }),
    occurred_at: Type.String({ description: "ISO-8601 UTC: when the event happened" }),
    created_at: Type.String({ description: "ISO-8601 UTC: when the notification was stored" }),
    read_at: Type.Union([Type.String(), Type.Null()], { description: "ISO-8601 UTC; null until read" }),
    payload: Type.Record(Type.String(), Type.Unknown(), {
      description: "The event's payload, as in the webhook body.",
    }),
  },
  { title: "PlayerNotification" },
);
export type PlayerNotification = Static<typeof PlayerNotification>;

export const ListQuery = Type.Object({
  limit: Type.Optional(
    Type.String({
      description: `Items per page, 1–${LIST_MAX} (default ${LIST_DEFAULT}).`,
      [DOCUMENTED_AS]: { type: "integer", minimum: 1, maximum: LIST_MAX, default: LIST_DEFAULT },
    }),
  ),
  cursor: Type.Optional(Type.String({ description: "The next_cursor of the previous page." })),
  unread: Type.Optional(
    Type.String({
      description: "true: unread notifications only.",
      [DOCUMENTED_AS]: { type: "boolean", default: false },
    }),
  ),
});

export const ListResponse = Type.Object(
  {
    items: Type.Array(PlayerNotification, { description: "Newest first." }),
    next_cursor: Type.Union([Type.String(), Type.Null()], { description: "null on the last page" }),
    unread_count: Type.Integer({ minimum: 0 }),
  },
  { title: "PlayerNotificationList" },
);
export type ListResponse = Static<typeof ListResponse>;

export const SummaryResponse = Type.Object(
  {
    unread_count: Type.Integer({ minimum: 0 }),
    last_seq: Type.Integer({ minimum: 0, description: "The seq of the player's latest notification; 0 when none." }),
  },
  { title: "PlayerNotificationSummary" },
);

export const ReadBody = Type.Union(
  [
    Type.Object(
      {
        notification_ids: Type.Array(Type.String({ format: "uuid" }), { minItems: 1, maxItems: READ_IDS_MAX }),
      },
      { title: "ReadByIds" },
    ),
    Type.Object({ up_to_seq: Type.Integer({ minimum: 0, maximum: MAX_SEQ }) }, { title: "ReadUpToSeq" }),
  ],
  {
    title: "PlayerReadRequest",
    description: "Either the ids to mark read, or every notification up to and including a seq.",
  },
);
export type ReadBody = Static<typeof ReadBody>;

export const ReadResponse = Type.Object({ unread_count: Type.Integer({ minimum: 0 }) }, { title: "PlayerReadResult" });

export const TicketResponse = Type.Object(
  {
    ticket: Type.String({ description: "Pass as ?ticket= to the stream, once, within expires_in seconds." }),
    expires_in: Type.Integer({ examples: [60] }),
  },
  { title: "StreamTicket" },
);

export const StreamQuery = Type.Object({
  ticket: Type.Optional(Type.String({ description: "A ticket from POST /v1/me/stream-tickets, instead of a header." })),
  last_event_id: Type.Optional(
    Type.String({
      description: `The seq of the last notification received (0 to ${MAX_SEQ}), when the Last-Event-ID header cannot be sent.`,
    }),
  ),
});
