// Undo of a console change (write scope): within the undo window, the compensating change through the same command
// path as the API (a grant is undone by a revoke, a revoke by a grant with the expiry it cleared, an extension by
// moving the expiry back to the one it replaced), with the reason given. Its source id is
// `undo:<audit_id>` and its idempotency key `console-undo-<audit_id>`, so the audit log says which row it undoes and
// undoing twice changes nothing more: a second undo finds the first (or replays it under the same key). Only the
// latest change of an entitlement is offered: undoing an older one would overwrite what happened since. An expiry to
// restore that has passed is refused rather than restored: the item would be revoked by the scheduler at once, which
// is a revoke the operator did not ask for (they can revoke instead).
import type { Caller } from "../../shared/auth/guard.ts";
import { field } from "../../shared/console/form.ts";
import { consoleHref, type Html, html, sentence } from "../../shared/console/html.ts";
import type { Action } from "../../shared/console/kit.ts";
import { isUuid } from "../../shared/ids.ts";
import { throughGate } from "../edge/route-deps.ts";
import type { RouteDeps } from "../features/commands/run.ts";
import type { CommandBody } from "../features/entitlements/model.ts";
import { checkFields } from "../features/entitlements/validation.ts";
import { requireScope } from "./pages.ts";
import { findUndoTarget, type UndoTarget, undoSourceId } from "./undo-queries.ts";
import { type ConsoleActor, grant, revoke, undoExtend, type WriteOutcome } from "./writes.ts";

type Notice = { ok: boolean; text: Html };

/** What the undo of each action is called in its notice. */
const UNDONE: Partial<Record<UndoTarget["action"], string>> = {
  GRANT: "grant",
  REVOKE: "revoke",
  EXTEND: "extension",
};

/** Why `target` cannot be undone now, or undefined when it can. */
function refusal(target: UndoTarget, now: Date, windowMs: number): Notice | undefined {
  if (target.undone) return { ok: true, text: sentence`Already undone: nothing changed.` };
  if (!target.caller?.startsWith("console:"))
    return { ok: false, text: sentence`Only a change made in the console can be undone here.` };
  if (target.source_id?.startsWith(undoSourceId("")))
    return { ok: false, text: sentence`An undo is not undone in turn.` };
  if (!UNDONE[target.action])
    return { ok: false, text: sentence`Only a grant, a revoke or an extension is undone here.` };
  if (now.getTime() - target.occurred_at.getTime() > windowMs)
    return { ok: false, text: sentence`The undo window of this change has passed.` };
  if (target.action === "REVOKE" && target.version === 0) {
    return { ok: false, text: sentence`Nothing to undo: the item had never been granted.` };
  }
  const expiry = expiryRefusal(target, now);
  if (expiry) return expiry;
  if (target.version === null || target.current_version !== target.version) {
    return {
      ok: false,
      text: sentence`The entitlement has changed since: undo is offered for its latest change only.`,
    };
  }
  return undefined;
}

/** A revoke's or an extension's undo restores the expiry the item had before; refused when that has passed. */
function expiryRefusal(target: UndoTarget, now: Date): Notice | undefined {
  if (target.action === "GRANT") return undefined;
  const before = target.expires_before;
  const extension = target.action === "EXTEND";
  // Only for an extension recorded before extensions kept the expiry they replaced, right after a bundle grant: its
  // audit detail has no expiry, and the extension rewrote the expiry row that held it.
  if (extension && before === null)
    return {
      ok: false,
      text: sentence`Undo refused: the expiry before the extension is not recorded; revoke, then grant with the right one.`,
    };
  if (before === null || before.getTime() > now.getTime()) return undefined;
  return extension
    ? {
        ok: false,
        text: sentence`Undo refused: the expiry before the extension has passed; revoke instead if the item should end now.`,
      }
    : { ok: false, text: sentence`Nothing to undo: the expiry the item had before has passed.` };
}

/**
 * The notice of the undo's outcome. A grant's or a revoke's 409 means the item is already as the undo would leave it;
 * an extension's undo is refused when the item changed since, so its 409 is a refusal.
 */
const said = (outcome: WriteOutcome, action: UndoTarget["action"]): Notice => {
  const body = outcome.body as { code?: string; message?: string; version?: number };
  const done = html`Undid the ${UNDONE[action]}`;
  if (outcome.status === 200) return { ok: true, text: sentence`${done}, version ${body.version ?? 0}` };
  if (body.code === "ENTITLEMENT_STATE_CONFLICT" && action !== "EXTEND")
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
    if (!target) return { redirect: back, notice: { ok: false, text: sentence`No such change of this entitlement.` } };
    const refused = refusal(target, deps.now(), windowMs);
    if (refused) return { redirect: back, notice: refused };
    // The key of the undo is the change's own, in the signed-in token's key space.
    const actor = { tokenName: principal.name, formToken: `undo-${auditId}` };
    return { redirect: back, notice: said(await compensate(deps, actor, body, target), target.action) };
  };
}

/** The compensating change of a target that `refusal` let through. */
function compensate(deps: RouteDeps, actor: ConsoleActor, body: CommandBody, target: UndoTarget) {
  const before = target.expires_before?.toISOString();
  if (target.action === "GRANT") return revoke(deps, actor, body);
  if (target.action === "EXTEND") {
    if (before === undefined || target.version === null) throw new Error("an extension's undo without its expiry");
    // Only while the entitlement is still at the version the extension left: checked again under its lock.
    return undoExtend(deps, actor, { ...body, expires_at: before, version: target.version });
  }
  // A revoke cleared the expiry: its undo grants again with the expiry the item had.
  return grant(deps, actor, before ? { ...body, expires_at: before } : body);
}
