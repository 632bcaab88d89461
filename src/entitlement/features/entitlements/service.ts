// Grant, revoke and list (docs/api.md). A grant or a revoke is one call of `entitlement_status_change` (write/), its
// own transaction, run as every command is (commands/run.ts); its reply is made of the facts the function stored
// (replies.ts).
import { Value } from "@sinclair/typebox/value";
import type { Sql } from "postgres";
import { badRequest } from "../../../shared/http/errors.ts";
import { decodeCursor, pageOf } from "../../../shared/http/paging.ts";
import { parseInstant } from "../../../shared/instant.ts";
import { grantEntitlements } from "../../write/grant-entitlements.ts";
import { revokeEntitlement } from "../../write/revoke-entitlement.ts";
import type { CommandDeps, CommandReply, KeyedCommand } from "../commands/run.ts";
import { runChange } from "./change.ts";
import { toEntitlementDetail } from "./detail.ts";
import { requestHash } from "./hash.ts";
import {
  type Action,
  type CommandBody,
  EntitlementResponse,
  type EntitlementsResponse,
  StockKeepingUnit,
} from "./model.ts";
import { eventPayload } from "./outbox-event.ts";
import { listEntitlementsOfUser } from "./queries.ts";
import { changeReply } from "./replies.ts";

export type EntitlementCommand = KeyedCommand & { action: Action; body: CommandBody };

export type GrantReply = CommandReply<EntitlementResponse>;

/**
 * Runs a grant or revoke; throws only on database trouble (the call is then rolled back as a whole). One call: the
 * lock, the lookup, then either nothing (a live record: replay or key conflict; an expiry not ahead: 400) or the state
 * change with everything that commits with it, or only the 409 of a refused transition.
 */
export function executeCommand(deps: CommandDeps, command: EntitlementCommand): Promise<GrantReply> {
  const { action, body } = command;
  return runChange<EntitlementResponse>(deps, command, {
    action,
    hash: requestHash({ action, ...body }),
    ok: EntitlementResponse,
    reply: changeReply(action, body),
    expiresAt: body.expires_at,
    write: (context) => {
      const change = {
        ...context,
        userId: body.user_id,
        reason: body.reason,
        purchaseId: body.purchase_id,
        payload: eventPayload(action, body, command.traceId, context.now),
        detail: { ...body },
      };
      const expiresAt = body.expires_at === undefined ? null : new Date(body.expires_at);
      return action === "GRANT"
        ? grantEntitlements(deps.sql, { ...change, skus: [body.stock_keeping_unit], bundle: false, expiresAt })
        : revokeEntitlement(deps.sql, { ...change, sku: body.stock_keeping_unit });
    },
  });
}

/** One page of the user's entitlements, newest first; an unknown user has none. */
export async function listEntitlements(
  sql: Sql,
  input: { userId: string; limit: number; after?: ListCursor },
): Promise<EntitlementsResponse> {
  const rows = await listEntitlementsOfUser(sql, { ...input, limit: input.limit + 1 });
  const page = pageOf(rows, input.limit, (row) => [row.updated_key, row.stock_keeping_unit]);
  return {
    user_id: input.userId,
    entitlements: page.items.map((row) => {
      const { user_id: _, ...item } = toEntitlementDetail(row);
      return item;
    }),
    next_cursor: page.nextCursor,
  };
}

const CURSOR_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export type ListCursor = { updatedAt: string; sku: string };

/** The key a previous page ended with; anything this service did not make is 400. */
export function readListCursor(cursor: string | undefined): ListCursor | undefined {
  const key = decodeCursor(cursor, 2);
  if (!key) return undefined;
  const [updatedAt = "", sku = ""] = key;
  if (!CURSOR_INSTANT.test(updatedAt) || !parseInstant(updatedAt) || !Value.Check(StockKeepingUnit, sku)) {
    throw badRequest("cursor is invalid");
  }
  return { updatedAt, sku };
}
