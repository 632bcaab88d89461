// The Entitlement console's pages: a user (entitlements, points, forms), one entitlement's history, the outbox's
// health. Each reads through the same service functions as the API's GET routes, through the gate.

import type { Caller } from "../../shared/auth/guard.ts";
import { consoleHref, html, sentence, text } from "../../shared/console/html.ts";
import { ConsoleForbidden, type Page } from "../../shared/console/kit.ts";
import { unavailableOr } from "../edge/route-deps.ts";
import type { RouteDeps } from "../features/commands/run.ts";
import { StockKeepingUnit, UserId } from "../features/entitlements/model.ts";
import { listEntitlements } from "../features/entitlements/service.ts";
import { checkField } from "../features/entitlements/validation.ts";
import { readHistory } from "../features/history/service.ts";
import { getPoints } from "../features/points/service.ts";
import { readOutboxStats } from "../ops/queries.ts";
import { listFailedOutboxEvents, listOpenReservations } from "./queries.ts";
import { findUndoable } from "./undo-queries.ts";
import { entitlementsTable, grantForm, lookupForm, pointsSection, undoForm } from "./views.ts";

const SHOWN = 100;

export function requireScope(caller: Caller, scope: "read" | "write"): void {
  if (!caller.scopes.has(scope)) {
    // A JWT caller is told the OAuth scope its issuer must grant, as the API's 403 tells it.
    const named = caller.scopeNames?.[scope] ?? scope;
    throw new ConsoleForbidden(sentence`The token ${caller.name} does not have the ${html`${named}`} scope.`);
  }
}

type Read = <T>(work: () => Promise<T>) => Promise<T>;

function usersPage(deps: RouteDeps, read: Read): Page<Caller> {
  return async ({ principal, query, formFields }) => {
    requireScope(principal, "read");
    const given = query.get("user_id") ?? undefined;
    if (given === undefined || given === "") return { title: "Look a user up", body: lookupForm(undefined) };
    const userId = checkField("user_id", UserId, given);
    const [list, points, open] = await read(() =>
      Promise.all([
        listEntitlements(deps.sql, { userId, limit: SHOWN }),
        getPoints(deps.sql, userId, { limit: 20, cursor: undefined }),
        listOpenReservations(deps.sql, { userId, limit: SHOWN }),
      ]),
    );
    const canWrite = principal.scopes.has("write");
    const body = html`${lookupForm(userId)}
<h2>User <span data-testid="user-id">${text(userId)}</span></h2>
<h3>Entitlements${list.next_cursor ? ` (newest ${SHOWN})` : ""}</h3>
${entitlementsTable(userId, list.entitlements, canWrite, formFields)}
${canWrite ? grantForm(userId, formFields) : html`<p>This token may look, not act (no write scope).</p>`}
${pointsSection(points, open, canWrite, formFields)}`;
    return { title: "User", body };
  };
}

/** The history of one entitlement; its latest change, when made in the console within `undoWindowMs`, has an undo. */
function historyPage(deps: RouteDeps, read: Read, undoWindowMs: number): Page<Caller> {
  return async ({ principal, query, formFields }) => {
    requireScope(principal, "read");
    const userId = checkField("user_id", UserId, query.get("user_id") ?? undefined);
    const sku = checkField("stock_keeping_unit", StockKeepingUnit, query.get("sku") ?? undefined);
    const since = new Date(deps.now().getTime() - undoWindowMs);
    const [history, undoable] = await read(() =>
      Promise.all([
        readHistory(deps.sql, { userId, sku, limit: SHOWN }),
        principal.scopes.has("write") ? findUndoable(deps.sql, { userId, sku, since }) : undefined,
      ]),
    );
    const undo = (version: number | null, i: number) =>
      i === 0 && undoable && version === undoable.version ? undoForm(userId, sku, undoable.audit_id, formFields) : "";
    const rows = history.changes.map(
      (c, i) => html`<tr data-testid="history-row"><td><time>${c.occurred_at}</time></td><td>${c.action}</td>
<td class="status-${c.status}">${c.status}</td><td>${c.version ?? ""}</td><td>${text(c.reason)}</td>
<td>${text(c.source_id)}</td><td>${text(c.caller)}</td><td>${text(c.trace_id)}</td><td>${undo(c.version, i)}</td></tr>`,
    );
    const body = html`<p><a href="${consoleHref("/console/users", { user_id: userId })}">back to the user</a></p>
<h2>${text(userId)} · ${text(sku)}</h2>
${rows.length === 0 ? html`<p>No history.</p>` : html`<table><thead><tr><th>at</th><th>action</th><th>status</th><th>version</th><th>reason</th><th>source id</th><th>caller</th><th>trace</th><th></th></tr></thead><tbody>${rows}</tbody></table>`}`;
    return { title: "History", body };
  };
}

function outboxPage(deps: RouteDeps, read: Read): Page<Caller> {
  return async ({ principal, formFields }) => {
    requireScope(principal, "read");
    const [stats, failed] = await read(() =>
      Promise.all([readOutboxStats(deps.sql), listFailedOutboxEvents(deps.sql, { limit: SHOWN })]),
    );
    const counts = Object.entries(stats.byStatus).map(
      ([s, n]) => html`<tr data-testid="outbox-count"><td class="status-${s}">${s}</td><td>${n}</td></tr>`,
    );
    const rows = failed.map(
      (
        e,
      ) => html`<tr data-testid="failed-event-row"><td>${e.event_id}</td><td>${e.event_type}</td><td>${text(e.aggregate_key)}</td>
<td>${e.attempt_count}</td><td class="error-text">${text(e.last_error)}</td><td><time>${e.created_at.toISOString()}</time></td>
<td>${
        principal.scopes.has("write")
          ? html`<form method="post" action="/console/outbox/requeue" class="inline">${formFields()}
<input type="hidden" name="event_id" value="${e.event_id}"><button type="submit">Requeue</button></form>`
          : ""
      }</td></tr>`,
    );
    const oldest =
      stats.oldestUnpublishedAgeSeconds === null ? "none" : `${stats.oldestUnpublishedAgeSeconds.toFixed(1)} s old`;
    const body = html`<table><thead><tr><th>status</th><th>events</th></tr></thead><tbody>${counts}</tbody></table>
<p>Oldest unpublished event: ${oldest}</p>
<h2>FAILED events</h2>
${rows.length === 0 ? html`<p>None.</p>` : html`<table><thead><tr><th>event</th><th>type</th><th>key</th><th>attempts</th><th>last error</th><th>created</th><th></th></tr></thead><tbody>${rows}</tbody></table>`}`;
    return { title: "Outbox health", body };
  };
}

/** `undoWindowMs`: how long a console change offers its undo on the history page. */
export function entitlementPages(deps: RouteDeps, undoWindowMs: number): Record<string, Page<Caller>> {
  const read: Read = (work) => deps.gate.run(work).catch((error) => unavailableOr(deps, error));
  return {
    "/console/users": usersPage(deps, read),
    "/console/history": historyPage(deps, read, undoWindowMs),
    "/console/outbox": outboxPage(deps, read),
  };
}
