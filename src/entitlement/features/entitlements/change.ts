// One change of entitlement state as a command (a grant, a revoke, a bundle grant, an extension): its call under the
// request's Idempotency-Key (one file of write/ per call), run as every command is (commands/run.ts). What differs
// between them is only the call and the reply the caller makes of the facts it stored.
import type { TSchema } from "@sinclair/typebox";
import { traceparentOf } from "../../../shared/trace-context.ts";
import type { KeyedChange } from "../../write/change-params.ts";
import type { CommandOutcome, StoredReply } from "../../write/idempotency-params.ts";
import type { CommandAction } from "../commands/metrics.ts";
import { type CommandDeps, type CommandReply, type KeyedCommand, runCommand } from "../commands/run.ts";
import { assertNotPast } from "./validation.ts";

/** What every command's change passes besides its own fields, made at the command's clock. */
export type ChangeContext = Pick<KeyedChange, "now" | "traceId" | "traceparent" | "idempotency">;

/**
 * Runs one change: a live record is replayed (or a key conflict), an expiry not after now is a 400, and otherwise the
 * reply made of the facts the function stored is answered; an applied change has events to publish and, with an expiry, a due time.
 * `ok` is the shape of the stored 200, checked on replay.
 */
export function runChange<T>(
  deps: CommandDeps,
  command: KeyedCommand,
  args: {
    action: CommandAction;
    hash: string;
    ok: TSchema;
    /** The reply made of the facts the function stored (commands/run.ts). */
    reply: (facts: unknown) => StoredReply;
    expiresAt: string | undefined;
    write: (context: ChangeContext) => Promise<CommandOutcome>;
  },
): Promise<CommandReply<T>> {
  const { expiresAt } = args;
  return runCommand<T>(deps, command, {
    action: args.action,
    hash: args.hash,
    ok: args.ok,
    reply: args.reply,
    call: (idempotency, now) =>
      args.write({ now, traceId: command.traceId, traceparent: traceparentOf() ?? null, idempotency }),
    refuse: (outcome, now) => {
      if (outcome === "past") assertNotPast(expiresAt, now);
    },
    committed: { events: true, dueAt: expiresAt === undefined ? undefined : new Date(expiresAt) },
  });
}
