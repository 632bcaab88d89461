// Schemas of the send API (POST /v1/notifications): one source for the OpenAPI document and the reply's type. The
// body is checked field by field before its schema (validation.ts), so each refusal names its field and rule.
import { type Static, Type } from "@sinclair/typebox";
import { PLAIN_TEXT_PATTERN } from "../../../shared/ids.ts";
import { TYPE_PATTERN } from "./types.ts";

export const SEND_PATH = "/v1/notifications";
/** 1,000 recipients of 128-character ids, an 8 KiB `data`, a title and a body fit well within it. */
export const MAX_SEND_BODY_BYTES = 256 * 1024;
export const MAX_RECIPIENTS = 1000;
export const MAX_USER_ID_LENGTH = 128;
export const MAX_DATA_BYTES = 8 * 1024;
export const MAX_TITLE_LENGTH = 200;
export const MAX_BODY_LENGTH = 2000;
export const MAX_COLLAPSE_KEY_LENGTH = 64;
export const MAX_EXPIRY_AHEAD_MS = 30 * 24 * 3600 * 1000;
/** How long a key is remembered, as Entitlement's default: after it the same key is a new request. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

const Text = (maxLength: number, description: string) =>
  Type.Optional(Type.Union([Type.String({ maxLength }), Type.Null()], { description }));

export const SendBody = Type.Object(
  {
    type: Type.String({
      pattern: TYPE_PATTERN,
      description: "Your own type; not one Notification makes itself (EntitlementGranted, MatchFound, …).",
      examples: ["TournamentStarting"],
    }),
    user_ids: Type.Array(Type.String({ minLength: 1, maxLength: MAX_USER_ID_LENGTH, pattern: PLAIN_TEXT_PATTERN }), {
      minItems: 1,
      maxItems: MAX_RECIPIENTS,
      description: "The recipients; a repeated id counts once.",
    }),
    data: Type.Optional(
      Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
        description: `Any JSON object, at most ${MAX_DATA_BYTES} bytes serialised.`,
      }),
    ),
    title: Text(MAX_TITLE_LENGTH, "What a push shows as its title."),
    body: Text(MAX_BODY_LENGTH, "What a push shows as its text."),
    collapse_key: Text(
      MAX_COLLAPSE_KEY_LENGTH,
      "A newer notification with the same key for the same player supersedes the older (marked read if unread).",
    ),
    expires_at: Type.Optional(
      Type.Union([Type.String(), Type.Null()], {
        description: "ISO-8601 with an offset, in the future, at most 30 days ahead: not delivered after it.",
      }),
    ),
  },
  { title: "SendNotification" },
);

export const SendReply = Type.Object(
  {
    request_id: Type.String({ format: "uuid", description: "Each recipient's notification carries it." }),
    recipients: Type.Integer({ description: "Distinct recipients, each with one notification." }),
  },
  { title: "SendAccepted" },
);
export type SendReply = Static<typeof SendReply>;

/**
 * A checked request, normalised: distinct ids in the order sent, absent fields null, expires_at in UTC. It is what the
 * route's parser hands on, so it passes SendBody as it is.
 */
export type SendRequest = {
  type: string;
  user_ids: string[];
  data: Record<string, unknown> | null;
  title: string | null;
  body: string | null;
  collapse_key: string | null;
  expires_at: string | null;
};
