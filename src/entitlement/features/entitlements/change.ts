// One change of entitlement state as a command (a grant, a revoke, a bundle grant, an extension): the call of
// `entitlement_change` under the request's Idempotency-Key, and its reply. What differs between them is only what the
// caller passes: the action, the items and the bodies.
import type { TSchema } from "@sinclair/typebox";
import { traceparentOf } from "../../../shared/trace-context.ts";
import { changeEntitlements, type EntitlementChange } from "../../write/change-queries.ts";
import { type CommandDeps, type CommandReply, idempotencyArgs, replyOf } from "../../write/run.ts";
import { assertNotPast } from "./validation.ts";

export type KeyedCommand = { idempotencyKey: string; traceId: string; caller: string };

/** The change's own fields, made at the command's clock. */
export type ChangeOf = Omit<EntitlementChange, "now" | "traceId" | "traceparent" | "idempotency" | "lockedBy">;

/**
 * Runs one change: a live record is replayed (or a key conflict), an expiry not after now is a 400, and otherwise the
 * reply the function stored is answered. `ok` is the shape of the stored 200, checked on replay.
 */
export async function runEntitlementCommand<T>(
  deps: CommandDeps,
  command: KeyedCommand,
  args: { hash: string; ok: TSchema; expiresAt: string | undefined; change: (now: Date) => ChangeOf },
): Promise<CommandReply<T>> {
  const now = deps.now();
  const result = await changeEntitlements(deps.sql, {
    ...args.change(now),
    now,
    traceId: command.traceId,
    traceparent: traceparentOf() ?? null,
    idempotency: idempotencyArgs(deps, command, args.hash, now),
  });
  if (result.outcome === "past") {
    assertNotPast(args.expiresAt, now);
    throw new Error("entitlement_change reported a past expiry that is not past");
  }
  return replyOf<T>(result, args.hash, args.ok);
}
