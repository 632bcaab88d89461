// Undo of a console change (write scope): within the undo window, the compensating command through the same command
// path as the API (a grant is undone by a revoke, a revoke by a grant with the expiry it cleared), with the reason
// given. Its source id is
// `undo:<audit_id>` and its idempotency key `console-undo-<audit_id>`, so the audit log says which row it undoes and
// undoing twice changes nothing more: a second undo finds the first (or replays it under the same key). Only the
// latest change of an entitlement is offered: undoing an older one would overwrite what happened since.
import type { Caller } from "../../shared/auth/guard.ts";
import { field } from "../../shared/console/form.ts";
import { consoleHref, type Html, html, sentence } from "../../shared/console/html.ts";
import type { Action } from "../../shared/console/kit.ts";
import { isUuid } from "../../shared/ids.ts";
import { type RouteDeps, throughGate } from "../edge/route-deps.ts";
import { checkFields } from "../features/entitlements/validation.ts";
import { requireScope } from "./pages.ts";
import { findUndoTarget, type UndoTarget, undoSourceId } from "./undo-queries.ts";
import { grant, revoke, type WriteOutcome } from "./writes.ts";

type Notice = { ok: boolean; text: Html };

/** Why `target` cannot be undone now, or undefined when it can. */
function refusal(target: UndoTarget | undefined, now: Date, windowMs: number): Notice | undefined {
  if (!target) return { ok: false, text: sentence`No such change of this entitlement.` };
  if (target.undone) return { ok: true, text: sentence`Already undone: nothing changed.` };
  if (!target.caller?.startsWith("console:"))
    return { ok: false, text: sentence`Only a change made in the console can be undone here.` };
  if (target.source_id?.startsWith(undoSourceId("")))
    return { ok: false, text: sentence`An undo is not undone in turn.` };
  if (target.action !== "GRANT" && target.action !== "REVOKE")
    return {
      ok: false,
      text: sentence`Only a grant or a revoke is undone here: an extension moves an expiry later only.`,
    };
  if (now.getTime() - target.occurred_at.getTime() > windowMs)
    return { ok: false, text: sentence`The undo window of this change has passed.` };
  if (target.action === "REVOKE" && target.version === 0) {
    return { ok: false, text: sentence`Nothing to undo: the item had never been granted.` };
  }
  const before = target.action === "REVOKE" ? target.expires_before : null;
  if (before !== null && before.getTime() <= now.getTime()) {
    return { ok: false, text: sentence`Nothing to undo: the expiry the item had before has passed.` };
  }
  if (target.version === null || target.current_version !== target.version) {
    return {
      ok: false,
      text: sentence`The entitlement has changed since: undo is offered for its latest change only.`,
    };
  }
  return undefined;
}

const said = (outcome: WriteOutcome, done: Html): Notice => {
  const body = outcome.body as { code?: string; message?: string; version?: number };
  if (outcome.status === 200) return { ok: true, text: sentence`${done}, version ${body.version ?? 0}` };
  if (body.code === "ENTITLEMENT_STATE_CONFLICT")
    return { ok: true, text: sentence`Nothing to undo: ${body.message}.` };
  return { ok: false, text: sentence`Undo refused: ${html`${body.code}`}: ${body.message}` };
};

export function undoAction(deps: RouteDeps, windowMs: number): Action<Caller> {
  return async ({ principal, form }) => {
    requireScope(principal, "write");
    const auditId = (form.get("audit_id") ?? "").toLowerCase();
    const back = consoleHref("/console/history", {
      user_id: form.get("user_id") ?? "",
      sku: form.get("stock_keeping_unit") ?? "",
    });
    if (!isUuid(auditId)) return { redirect: back, notice: { ok: false, text: sentence`audit_id must be a UUID` } };
    const body = checkFields({
      user_id: field(form, "user_id"),
      stock_keeping_unit: field(form, "stock_keeping_unit"),
      reason: field(form, "reason"),
      purchase_id: undoSourceId(auditId),
    });
    const target = await throughGate(deps, () =>
      findUndoTarget(deps.sql, { userId: body.user_id, sku: body.stock_keeping_unit, auditId }),
    );
    const refused = refusal(target, deps.now(), windowMs);
    if (refused) return { redirect: back, notice: refused };
    // The key of the undo is the change's own, in the signed-in token's key space.
    const actor = { tokenName: principal.name, formToken: `undo-${auditId}` };
    // A revoke cleared the expiry: its undo grants again with the expiry the item had.
    const expiresAt = target?.action === "REVOKE" ? target.expires_before?.toISOString() : undefined;
    const outcome =
      target?.action === "GRANT"
        ? await revoke(deps, actor, body)
        : await grant(deps, actor, expiresAt ? { ...body, expires_at: expiresAt } : body);
    return { redirect: back, notice: said(outcome, html`Undid the ${target?.action.toLowerCase()}`) };
  };
}
