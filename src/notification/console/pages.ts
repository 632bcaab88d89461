// The Notification console: a user's notifications (status, attempts, last error) and the delivery DLQ, each FAILED
// notification with a requeue button. Reads and the requeue are the operator subcommands' statements (ops/queries.ts).
import { consoleHref, type Html, html, sentence, text } from "../../shared/console/html.ts";
import type { Action, Page } from "../../shared/console/kit.ts";
import type { Sql } from "../../shared/db.ts";
import { badRequest, unavailableOr } from "../../shared/http/errors.ts";
import { isUuid } from "../../shared/ids.ts";
import type { Logger } from "../../shared/logger.ts";
import { validUserId } from "../features/debug-inbox/service.ts";
import { listNotificationDlq, requeueDlqNotification } from "../ops/queries.ts";
import { listUserNotifications } from "./queries.ts";

export type Operator = { name: string };

const SHOWN = 100;
const at = (value: Date | null) => (value === null ? text(null) : html`<time>${value.toISOString()}</time>`);
const status = (value: string | null) =>
  value === null ? text("deleted") : html`<span class="status-${value}" data-testid="status">${value}</span>`;

const requeueForm = (formFields: () => Html, notificationId: string, userId?: string) =>
  html`<form method="post" action="/console/dlq/requeue" class="inline">${formFields()}
<input type="hidden" name="notification_id" value="${notificationId}">
${userId === undefined ? "" : html`<input type="hidden" name="user_id" value="${userId}">`}
<button type="submit">Requeue</button></form>`;

const lookupForm = (userId: string | undefined) =>
  html`<form method="get" action="/console/users" data-testid="lookup-form">
<label>User id <input type="text" name="user_id" value="${userId ?? ""}" required maxlength="128"></label>
<button type="submit">Look up</button></form>`;

export function notificationPages(sql: Sql): Record<string, Page<Operator>> {
  return {
    "/console/users": async ({ query, formFields }) => {
      const given = query.get("user_id");
      if (given === null || given === "") return { title: "Look a user up", body: lookupForm(undefined) };
      const userId = validUserId(given);
      const rows = (await listUserNotifications(sql, { userId, limit: SHOWN }).catch(unavailableOr)).map(
        (
          n,
        ) => html`<tr data-testid="notification-row"><td>${n.notification_id}</td><td>${n.type}</td><td data-testid="sku">${text(n.stock_keeping_unit)}</td><td>${status(n.status)}</td>
<td>${n.attempt_count}</td><td class="error-text">${text(n.last_error)}</td><td>${at(n.created_at)}</td><td>${at(n.sent_at)}</td>
<td>${n.status === "FAILED" ? requeueForm(formFields, n.notification_id, userId) : ""}</td></tr>`,
      );
      const body = html`${lookupForm(userId)}<h2>Notifications of <span data-testid="user-id">${text(userId)}</span></h2>
${rows.length === 0 ? html`<p data-testid="no-notifications">No notifications.</p>` : html`<table><thead><tr><th>notification</th><th>type</th><th>SKU</th><th>status</th><th>attempts</th><th>last error</th><th>created</th><th>sent</th><th></th></tr></thead><tbody>${rows}</tbody></table>`}`;
      return { title: "User", body };
    },
    "/console/dlq": async ({ formFields }) => {
      const rows = (await listNotificationDlq(sql, { limit: SHOWN }).catch(unavailableOr)).map(
        (d) => html`<tr data-testid="dlq-row"><td>${d.notification_id}</td>
<td>${d.user_id === null ? text(null) : html`<a href="${consoleHref("/console/users", { user_id: d.user_id })}">${text(d.user_id)}</a>`}</td>
<td>${status(d.status)}</td><td>${d.attempt_count ?? ""}</td><td class="error-text">${text(d.error_message)}</td><td>${at(d.created_at)}</td>
<td>${d.status === "FAILED" ? requeueForm(formFields, d.notification_id) : ""}</td></tr>`,
      );
      const body =
        rows.length === 0
          ? html`<p data-testid="dlq-empty">The delivery DLQ is empty.</p>`
          : html`<table><thead><tr><th>notification</th><th>user</th><th>status</th><th>attempts</th><th>error</th><th>failed at</th><th></th></tr></thead><tbody>${rows}</tbody></table>`;
      return { title: `Delivery DLQ (oldest ${SHOWN})`, body };
    },
  };
}

export function notificationActions(sql: Sql, log: Logger): Record<string, Action<Operator>> {
  return {
    "/console/dlq/requeue": async ({ form, principal }) => {
      const id = form.get("notification_id") ?? "";
      if (!isUuid(id)) throw badRequest("notification_id must be a UUID");
      const userId = form.get("user_id");
      const back = userId ? consoleHref("/console/users", { user_id: validUserId(userId) }) : "/console/dlq";
      const result = await requeueDlqNotification(sql, id.toLowerCase()).catch(unavailableOr);
      log.info(
        { caller: `console:${principal.name}`, notification_id: id, outcome: result.kind },
        "console dlq requeue",
      );
      const notice =
        result.kind === "requeued"
          ? { ok: true, text: sentence`requeued ${id}: FAILED -> PENDING, attempts ${result.previousAttempts} -> 0` }
          : result.kind === "not-failed"
            ? { ok: false, text: sentence`${id} is ${result.status}, not FAILED: nothing to do` }
            : { ok: false, text: sentence`no notification ${id}` };
      return { redirect: back, notice };
    },
  };
}
