// TypeBox schemas of an entitlement's history (docs/api.md): the one source for validation, types and OpenAPI.
import { type Static, Type } from "@sinclair/typebox";
import { EntitlementStatus, NextCursor } from "../entitlements/model.ts";

export const AuditAction = Type.Union(
  [Type.Literal("GRANT"), Type.Literal("REVOKE"), Type.Literal("EXPIRE"), Type.Literal("EXTEND")],
  {
    description:
      "EXPIRE: revoked by the scheduler when expires_at passed; EXTEND: expires_at moved later, or back to the one an " +
      "extension replaced by the console's undo of it (source_id undo:<audit_id>).",
  },
);
export type AuditAction = Static<typeof AuditAction>;

/** The status each action leaves the entitlement in. */
export const STATUS_AFTER: Record<AuditAction, EntitlementStatus> = {
  GRANT: "ACTIVE",
  REVOKE: "REVOKED",
  EXPIRE: "REVOKED",
  EXTEND: "ACTIVE",
};

const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T, description: string) =>
  Type.Union([schema, Type.Null()], { description });

export const Change = Type.Object(
  {
    action: AuditAction,
    status: EntitlementStatus,
    version: nullable(
      Type.Integer({ minimum: 0 }),
      "The version after the change; null on changes recorded before versions were.",
    ),
    reason: nullable(Type.String(), "The request's reason ('expiry' for EXPIRE)."),
    source_id: nullable(Type.String(), "The request's purchase_id."),
    caller: nullable(
      Type.String(),
      "The token name of the caller; null when authentication was disabled or for EXPIRE.",
    ),
    trace_id: nullable(Type.String(), "The trace of the request or of the scheduler's run."),
    occurred_at: Type.String({ format: "date-time" }),
  },
  { title: "EntitlementChange" },
);
export type Change = Static<typeof Change>;

export const HistoryResponse = Type.Object(
  {
    user_id: Type.String(),
    stock_keeping_unit: Type.String(),
    changes: Type.Array(Change, { description: "Newest first." }),
    next_cursor: NextCursor,
  },
  { title: "EntitlementHistory" },
);
export type HistoryResponse = Static<typeof HistoryResponse>;
