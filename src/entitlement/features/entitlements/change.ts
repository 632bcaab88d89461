// One change of entitlement state as a command (a grant, a revoke, a bundle grant, an extension): its call under the
// request's Idempotency-Key (one file of write/ per call) and its reply. What differs between them is only the call
// and the replies the caller makes for it.
import type { TSchema } from "@sinclair/typebox";
import { traceparentOf } from "../../../shared/trace-context.ts";
import type { KeyedChange } from "../../write/change-params.ts";
import { type CommandDeps, type CommandOutcome, type CommandReply, idempotencyArgs, replyOf } from "../../write/run.ts";
import { assertNotPast } from "./validation.ts";

export type KeyedCommand = {
  idempotencyKey: string;
  traceId: string;
  caller: string;
  /** The key space of the key when it is not the caller's (write/run.ts IdempotencyArgs). */
  keyScope?: string;
};

/** What every command's change passes besides its own fields, made at the command's clock. */
export type ChangeContext = Pick<KeyedChange, "now" | "traceId" | "traceparent" | "idempotency">;

/**
 * Runs one change: a live record is replayed (or a key conflict), an expiry not after now is a 400, and otherwise the
 * reply the function stored is answered. `ok` is the shape of the stored 200, checked on replay.
 */
export async function runEntitlementCommand<T>(
  deps: CommandDeps,
  command: KeyedCommand,
  args: {
    hash: string;
    ok: TSchema;
    expiresAt: string | undefined;
    write: (context: ChangeContext) => Promise<CommandOutcome>;
  },
): Promise<CommandReply<T>> {
  const now = deps.now();
  const result = await args.write({
    now,
    traceId: command.traceId,
    traceparent: traceparentOf() ?? null,
    idempotency: idempotencyArgs(deps, command, args.hash, now),
  });
  if (result.outcome === "past") {
    assertNotPast(args.expiresAt, now);
    throw new Error("the change reported a past expiry that is not past");
  }
  return replyOf<T>(result, args.hash, args.ok);
}
