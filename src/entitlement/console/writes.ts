// The console's one way to change anything: the same service functions the API's command routes call, through the
// same gate, with the same idempotency. The key is the form's one-time token, so submitting one form twice (a double
// click, a reload of the POST) is one change; the caller, and with it the audit row and the key space, is the
// signed-in token's name marked as the console, `console:<name>`. Only this file knows the command path's signatures.

import { ApiError } from "../../shared/http/errors.ts";
import { traceIdOf } from "../edge/headers.ts";
import { throughGate } from "../edge/route-deps.ts";
import type { RouteDeps } from "../features/commands/run.ts";
import type { CommandBody } from "../features/entitlements/model.ts";
import { executeCommand } from "../features/entitlements/service.ts";
import type { ExtensionBody } from "../features/extensions/model.ts";
import { executeExtension } from "../features/extensions/service.ts";
import { type ExtensionUndoBody, executeExtensionUndo } from "../features/extensions/undo.ts";
import { cancelReservation } from "../features/points/service.ts";

/** Who acts, and the form that carries the change. */
export type ConsoleActor = { tokenName: string; formToken: string };

/** What the command answered: its status and its JSON reply (the entitlement, or `{code, message}`). */
export type WriteOutcome = { status: number; body: unknown };

export const consoleCaller = (tokenName: string) => `console:${tokenName}`;

function keyed(actor: ConsoleActor) {
  return {
    idempotencyKey: `console-${actor.formToken}`,
    // The active request span's trace, as the API's commands take when no X-Trace-Id is given.
    traceId: traceIdOf(new Headers()),
    caller: consoleCaller(actor.tokenName),
  };
}

function run(deps: RouteDeps, work: () => Promise<WriteOutcome>): Promise<WriteOutcome> {
  return throughGate(deps, work);
}

export function grant(deps: RouteDeps, actor: ConsoleActor, body: CommandBody): Promise<WriteOutcome> {
  return run(deps, () => executeCommand(deps, { action: "GRANT", body, ...keyed(actor) }));
}

export function revoke(deps: RouteDeps, actor: ConsoleActor, body: CommandBody): Promise<WriteOutcome> {
  return run(deps, () => executeCommand(deps, { action: "REVOKE", body, ...keyed(actor) }));
}

export function extend(deps: RouteDeps, actor: ConsoleActor, body: ExtensionBody): Promise<WriteOutcome> {
  return run(deps, () => executeExtension(deps, { body, ...keyed(actor) }));
}

/** The undo of an extension (undo.ts): the expiry it replaced, while the entitlement is at the version it left. */
export function undoExtend(deps: RouteDeps, actor: ConsoleActor, body: ExtensionUndoBody): Promise<WriteOutcome> {
  return run(deps, () => executeExtensionUndo(deps, { body, ...keyed(actor) }));
}

/** A reservation unknown to the database is a 404 outcome, as the API answers it. */
export function cancel(deps: RouteDeps, actor: ConsoleActor, reservationId: string): Promise<WriteOutcome> {
  return run(deps, () =>
    cancelReservation(deps, { reservationId, ...keyed(actor) }).catch((error) => {
      if (error instanceof ApiError && error.status === 404)
        return { status: 404, body: { code: error.code, message: error.message } };
      throw error;
    }),
  );
}
