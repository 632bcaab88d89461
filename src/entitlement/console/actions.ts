// The Entitlement console's actions: grant, revoke, extend, cancel a reservation (through writes.ts, the API's
// command path) and requeue a FAILED outbox event (the operator subcommand's statement). Each needs the write scope,
// checks its fields as the API does, and answers with the user's page and a notice saying what happened.

import type { Caller } from "../../shared/auth/guard.ts";
import { field } from "../../shared/console/form.ts";
import { consoleHref, type Html, html, sentence } from "../../shared/console/html.ts";
import type { Action, ActionContext } from "../../shared/console/kit.ts";
import type { Notice } from "../../shared/console/session.ts";
import { ApiError, badRequest } from "../../shared/http/errors.ts";
import { isUuid } from "../../shared/ids.ts";
import { unavailableOr } from "../edge/route-deps.ts";
import type { RouteDeps } from "../features/commands/run.ts";
import { UserId } from "../features/entitlements/model.ts";
import { checkExpiresAt, checkField, checkFields } from "../features/entitlements/validation.ts";
import { requeueFailedOutboxEvents } from "../ops/queries.ts";
import { requireScope } from "./pages.ts";
import { type ConsoleActor, cancel, consoleCaller, extend, grant, revoke, type WriteOutcome } from "./writes.ts";

const DEFAULT_PURCHASE_ID = "support-console";

/** The fields of a grant, revoke or extension, checked as the API checks a command's body. */
function commandBody(form: URLSearchParams) {
  return checkFields({
    user_id: field(form, "user_id"),
    stock_keeping_unit: field(form, "stock_keeping_unit"),
    reason: field(form, "reason"),
    purchase_id: field(form, "purchase_id") ?? DEFAULT_PURCHASE_ID,
  });
}

/** The notice of a command: `done` (made with `sentence`) and what the command answered. */
function summary(done: Html, outcome: WriteOutcome) {
  const body = outcome.body as { code?: string; message?: string; status?: string; version?: number };
  // The code and the status are this service's own words; the message may quote what was sent.
  if (outcome.status >= 300) {
    return { ok: false, text: sentence`${done} refused: ${html`${body.code}`}: ${body.message}` };
  }
  const version = body.version === undefined ? "" : sentence`, version ${body.version}`;
  return { ok: true, text: sentence`${done}: ${html`${body.status}`}${version}` };
}

/** Runs an action on a user's page: its refusals (bad input, a conflict) become the notice on that page. */
function onUserPage(act: (context: ActionContext<Caller>, actor: ConsoleActor) => Promise<Notice>): Action<Caller> {
  return async (context) => {
    requireScope(context.principal, "write");
    const userId = context.form.get("user_id") ?? "";
    const back = consoleHref("/console/users", { user_id: userId });
    try {
      checkField("user_id", UserId, userId);
      const notice = await act(context, { tokenName: context.principal.name, formToken: context.formToken });
      return { redirect: back, notice };
    } catch (error) {
      if (error instanceof ApiError && error.status === 400)
        return { redirect: back, notice: { ok: false, text: sentence`${error.message}` } };
      throw error;
    }
  };
}

export function entitlementActions(deps: RouteDeps): Record<string, Action<Caller>> {
  return {
    "/console/actions/grant": onUserPage(async ({ form }, actor) => {
      const body = commandBody(form);
      const expiresAt = field(form, "expires_at");
      const withExpiry =
        expiresAt === undefined ? body : { ...body, expires_at: checkExpiresAt(expiresAt, deps.now()) };
      return summary(sentence`granted ${body.stock_keeping_unit}`, await grant(deps, actor, withExpiry));
    }),
    "/console/actions/revoke": onUserPage(async ({ form }, actor) => {
      const body = commandBody(form);
      return summary(sentence`revoked ${body.stock_keeping_unit}`, await revoke(deps, actor, body));
    }),
    "/console/actions/extend": onUserPage(async ({ form }, actor) => {
      const body = commandBody(form);
      const expiresAt = checkExpiresAt(field(form, "expires_at"), deps.now());
      return summary(
        sentence`extended ${body.stock_keeping_unit}`,
        await extend(deps, actor, { ...body, expires_at: expiresAt }),
      );
    }),
    "/console/actions/cancel": onUserPage(async ({ form }, actor) => {
      const id = form.get("reservation_id") ?? "";
      if (!isUuid(id)) throw badRequest("reservation_id must be a UUID");
      return summary(sentence`cancelled reservation ${id}`, await cancel(deps, actor, id.toLowerCase()));
    }),
    "/console/outbox/requeue": async ({ principal, form }) => {
      requireScope(principal, "write");
      const id = form.get("event_id") ?? "";
      const back = "/console/outbox";
      if (!isUuid(id)) return { redirect: back, notice: { ok: false, text: sentence`event_id must be a UUID` } };
      const rows = await deps.gate
        .run(() => requeueFailedOutboxEvents(deps.sql, { eventId: id.toLowerCase() }))
        .catch((error) => unavailableOr(deps, error));
      deps.log.info(
        { caller: consoleCaller(principal.name), event_id: id, requeued: rows.length },
        "console outbox requeue",
      );
      const text =
        rows.length > 0 ? sentence`requeued ${id}: FAILED -> PENDING` : sentence`${id} is not FAILED: nothing to do`;
      return { redirect: back, notice: { ok: rows.length > 0, text } };
    },
  };
}
