// TypeBox schemas of the Entitlement API: the one source for request validation (validation.ts), the TypeScript
// types and the OpenAPI document. Limits are those of docs/api.md.
import { type Static, type TString, Type } from "@sinclair/typebox";
import { LimitQuery } from "../../../shared/http/paging.ts";
import { PLAIN_TEXT_PATTERN } from "../../../shared/ids.ts";

/**
 * Non-blank (at least one character above U+0020), and free of control characters (C0, DEL and C1): the one text rule
 * of both services (shared/ids.ts), so Notification accepts every id this API commits.
 */
const field = (maxLength: number, description: string, example: string): TString =>
  Type.String({ minLength: 1, maxLength, pattern: PLAIN_TEXT_PATTERN, description, examples: [example] });

export const UserId = field(128, "The user who owns the entitlement.", "u_123");
export const StockKeepingUnit = field(128, "The item (SKU).", "item1");

/** Grant and revoke share this body; unknown fields are ignored. Field order is the order errors are reported in. */
export const CommandBody = Type.Object(
  {
    user_id: UserId,
    stock_keeping_unit: StockKeepingUnit,
    reason: field(64, "Why (free text, stored as `source`).", "purchase"),
    purchase_id: field(128, "The purchase or other source id (stored as `source_id`).", "p_456"),
  },
  { title: "EntitlementCommand" },
);
export type CommandBody = Static<typeof CommandBody> & { expires_at?: string };

/** The longest expiry a grant may set, in calendar years from now. */
export const MAX_EXPIRY_AHEAD_YEARS = 10;

export const ExpiresAtInput = Type.String({
  format: "date-time",
  description:
    "ISO-8601 with an offset naming a real date (no February 30th), in the future, at most 10 calendar years ahead. When it passes the entitlement is revoked.",
  examples: ["2027-01-08T00:00:00+09:00"],
});

/** A grant's body: the command's, plus an optional expiry. */
export const GrantBody = Type.Object(
  { ...CommandBody.properties, expires_at: Type.Optional(ExpiresAtInput) },
  { title: "EntitlementGrant" },
);

export const EntitlementStatus = Type.Union([Type.Literal("ACTIVE"), Type.Literal("REVOKED")]);
export type EntitlementStatus = Static<typeof EntitlementStatus>;

export const EntitlementResponse = Type.Object(
  {
    user_id: Type.String(),
    stock_keeping_unit: Type.String(),
    status: EntitlementStatus,
    version: Type.Integer({ minimum: 0, description: "0 for a new row, +1 per transition." }),
    updated_at: Type.String({ format: "date-time", examples: ["2026-01-08T07:10:00.123Z"] }),
    expires_at: Type.Optional(
      Type.String({ format: "date-time", description: "A grant's expiry, when the grant set one (in UTC)." }),
    ),
  },
  { title: "Entitlement" },
);
export type EntitlementResponse = Static<typeof EntitlementResponse>;

const ExpiresAt = Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
  description: "When the entitlement ends by itself (it is then REVOKED); null: never.",
});

/** An entitlement's state as every route that returns one gives it (the bundle's items, the list, the check). */
export const EntitlementState = {
  stock_keeping_unit: Type.String(),
  status: EntitlementStatus,
  version: Type.Integer({ minimum: 0 }),
  updated_at: Type.String({ format: "date-time" }),
};

/** The cursor of a paged answer. */
export const NextCursor = Type.Union([Type.String(), Type.Null()], {
  description: "Pass as ?cursor= for the next page; null on the last page.",
});

/** One entitlement as the check route returns it; its `version` is also the ETag. */
export const EntitlementDetail = Type.Object(
  {
    user_id: Type.String(),
    ...EntitlementState,
    version: Type.Integer({ minimum: 0, description: "0 for a new row, +1 per transition; the ETag." }),
    expires_at: ExpiresAt,
  },
  { title: "EntitlementDetail" },
);
export type EntitlementDetail = Static<typeof EntitlementDetail>;

export const EntitlementSummary = Type.Object(
  { ...EntitlementState, expires_at: ExpiresAt },
  { title: "EntitlementSummary" },
);
export type EntitlementSummary = Static<typeof EntitlementSummary>;

export const EntitlementsResponse = Type.Object(
  {
    user_id: Type.String(),
    entitlements: Type.Array(EntitlementSummary, { description: "Newest first, at most `limit`." }),
    next_cursor: NextCursor,
  },
  { title: "Entitlements" },
);
export type EntitlementsResponse = Static<typeof EntitlementsResponse>;

export const UserParams = Type.Object({ user_id: UserId });
export const ItemParams = Type.Object({ user_id: UserId, stock_keeping_unit: StockKeepingUnit });

export const ListQuery = Type.Object({
  limit: LimitQuery("Entitlements per page, 1–1000 (default 100)."),
  cursor: Type.Optional(Type.String({ description: "The next_cursor of the previous page." })),
});

export type Action = "GRANT" | "REVOKE";
export const TARGET_STATUS: Record<Action, EntitlementStatus> = { GRANT: "ACTIVE", REVOKE: "REVOKED" };

/** Body size limit, in bytes. */
export const MAX_BODY_BYTES = 16 * 1024;

export type ErrorReply = { code: string; message: string };
export type CommandReplyBody = EntitlementResponse | ErrorReply;

const RESPONSE_KEYS = Object.keys(EntitlementResponse.properties);
const ERROR_KEYS = ["code", "message"];

/**
 * The reply text, keys in schema order. Replays re-render the stored JSONB (which reorders keys) through this same
 * function, so a replay is byte-identical to the first reply.
 */
export function renderCommandReply(status: number, body: CommandReplyBody): string {
  return JSON.stringify(body, status === 200 ? RESPONSE_KEYS : ERROR_KEYS);
}
