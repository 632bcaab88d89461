// The debug inbox response: one schema for validation, types and OpenAPI.
import { type Static, Type } from "@sinclair/typebox";
import { DOCUMENTED_AS } from "../../../shared/http/openapi-refine.ts";
import { NOTIFICATION_TYPES } from "../../intake/consumer/handler.ts";

export const InboxParams = Type.Object({ user_id: Type.String() });

export const NotificationSummary = Type.Object(
  {
    notification_id: Type.String({ format: "uuid" }),
    event_id: Type.String({ format: "uuid" }),
    // Read as any text: a row a newer release stored during a rolling upgrade may carry a type this one does not know.
    type: Type.String({
      [DOCUMENTED_AS]: { type: "string", enum: [...NOTIFICATION_TYPES], example: "EntitlementGranted" },
      description: "The kind of event the notification is for; a later release may add types.",
    }),
    status: Type.Union([
      Type.Literal("PENDING"),
      Type.Literal("PROCESSING"),
      Type.Literal("SENT"),
      Type.Literal("FAILED"),
    ]),
    created_at: Type.String({ description: "ISO-8601 UTC" }),
    sent_at: Type.Union([Type.String(), Type.Null()]),
    payload: Type.Record(Type.String(), Type.Unknown(), { description: "The stored event payload as an object." }),
  },
  { title: "NotificationSummary" },
);

export const InboxResponse = Type.Object(
  {
    user_id: Type.String(),
    notifications: Type.Array(NotificationSummary, { description: "Newest first, at most the latest 100." }),
  },
  { title: "Inbox" },
);
export type InboxResponse = Static<typeof InboxResponse>;
