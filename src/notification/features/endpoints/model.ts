// Schemas of the endpoints admin API: one source for validation, types and the OpenAPI document.
import { type Static, type TLiteral, Type } from "@sinclair/typebox";
import { LimitQuery } from "../../../shared/http/paging.ts";
import { describeSchema } from "../../../shared/http/validation-message.ts";
import { NOTIFICATION_TYPES } from "../../intake/consumer/handler.ts";
import { TYPE_PATTERN } from "../send/types.ts";

type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> };
/** One literal per built-in type, as a tuple, then the rule of the types senders name themselves. */
const TYPE_LITERALS = NOTIFICATION_TYPES.map((t) => Type.Literal(t)) as Literals<typeof NOTIFICATION_TYPES>;
const EventType = Type.Union(
  [
    ...TYPE_LITERALS,
    Type.String({ pattern: TYPE_PATTERN, description: "A type of your own (POST /v1/notifications)." }),
  ],
  { description: "A notification type: built-in, or one a sender names itself." },
);
const EventTypes = Type.Union([Type.Array(EventType, { minItems: 1, maxItems: 100 }), Type.Null()], {
  description: "The notification types sent to this endpoint; null or absent: every type.",
});
const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: "http or https, without user info; its host may not be or resolve to a private address.",
  examples: ["https://hooks.example.com/notifications"],
});
const Description = Type.String({ maxLength: 500 });

/** What event_types must be, as a refusal says it. */
export const EVENT_TYPES_RULE = describeSchema(EventTypes).replace(/^A/, "a");

export const EndpointParams = Type.Object({
  endpoint_id: Type.String({ description: "A UUID; anything else is 404." }),
});

export const CreateEndpointBody = Type.Object(
  {
    url: Url,
    description: Type.Optional(Description),
    event_types: Type.Optional(EventTypes),
    enabled: Type.Optional(Type.Boolean({ default: true })),
  },
  { title: "CreateEndpoint" },
);
export type CreateEndpointBody = Static<typeof CreateEndpointBody>;

export const PatchEndpointBody = Type.Object(
  {
    url: Type.Optional(Url),
    description: Type.Optional(Description),
    event_types: Type.Optional(EventTypes),
    enabled: Type.Optional(Type.Boolean({ description: "true on a disabled endpoint clears disabled_reason." })),
  },
  { title: "ChangeEndpoint" },
);
export type PatchEndpointBody = Static<typeof PatchEndpointBody>;

export const Endpoint = Type.Object(
  {
    endpoint_id: Type.String({ format: "uuid" }),
    url: Type.String(),
    description: Type.String(),
    event_types: EventTypes,
    enabled: Type.Boolean(),
    disabled_reason: Type.Union([Type.String(), Type.Null()], {
      description: "Why the service disabled the endpoint; null when enabled or disabled by a caller.",
    }),
    failing_since: Type.Union([Type.String(), Type.Null()], {
      description: "Start of the current run of failed attempts; null after any success.",
    }),
    previous_secret_until: Type.Union([Type.String(), Type.Null()], {
      description: "Until when the secret before the last rotation is still signed with.",
    }),
    created_at: Type.String({ description: "ISO-8601 UTC" }),
    updated_at: Type.String({ description: "ISO-8601 UTC" }),
  },
  { title: "Endpoint" },
);
export type Endpoint = Static<typeof Endpoint>;

const Secret = Type.String({
  description: "whsec_<base64>: shown only here.",
  examples: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
});

export const CreatedEndpoint = Type.Composite([Endpoint, Type.Object({ secret: Secret })], {
  title: "CreatedEndpoint",
});

export const EndpointList = Type.Object(
  { endpoints: Type.Array(Endpoint), next_cursor: Type.Union([Type.String(), Type.Null()]) },
  { title: "EndpointList" },
);

export const PageQuery = Type.Object({
  limit: LimitQuery("Page size, 1 to 1000 (default 100)."),
  cursor: Type.Optional(Type.String({ description: "The next_cursor of the previous page." })),
});

export const RotateBody = Type.Object(
  {
    overlap: Type.Optional(
      Type.String({
        description: "How long the current secret is still signed with: 0s to 7d (default 24h).",
        examples: ["24h"],
      }),
    ),
  },
  { title: "RotateSecret" },
);
export const RotatedSecret = Type.Object({ secret: Secret }, { title: "RotatedSecret" });

export const Attempt = Type.Object(
  {
    attempt_id: Type.String(),
    notification_id: Type.String({ format: "uuid" }),
    attempt: Type.Integer({ description: "1 for the first attempt of this delivery." }),
    at: Type.String({ description: "ISO-8601 UTC" }),
    status_code: Type.Union([Type.Integer(), Type.Null()], { description: "null when no answer came." }),
    duration_ms: Type.Integer(),
    error: Type.Union([Type.String(), Type.Null()]),
    response_excerpt: Type.Union([Type.String(), Type.Null()], { description: "The answer's first 1,024 characters." }),
  },
  { title: "Attempt" },
);
export const AttemptList = Type.Object(
  { attempts: Type.Array(Attempt), next_cursor: Type.Union([Type.String(), Type.Null()]) },
  { title: "AttemptList" },
);

export const ReplayBody = Type.Object(
  {
    since: Type.String({ description: "ISO-8601 with offset: the window's start (included)." }),
    until: Type.Optional(
      Type.String({ description: "ISO-8601 with offset: the window's end (excluded); default now." }),
    ),
    only_failed: Type.Optional(
      Type.Boolean({ default: false, description: "Only notifications whose delivery ended FAILED." }),
    ),
  },
  { title: "Replay" },
);
export type ReplayBody = Static<typeof ReplayBody>;
export const ReplayAccepted = Type.Object(
  {
    replay_id: Type.String({ format: "uuid" }),
    notifications: Type.Integer({ description: "Notifications of the window sent again (or still on their way)." }),
  },
  { title: "ReplayAccepted" },
);
