// The tables and forms of the Entitlement console's user page. Every value from the database goes through `text` (or
// the `html` template's escaping): ids may hold any printable Unicode.
import { consoleHref, type Html, html, text } from "../../shared/console/html.ts";
import type { EntitlementSummary } from "../features/entitlements/model.ts";
import type { PointsResponse } from "../features/points/model.ts";
import type { OpenReservation } from "./queries.ts";

const instant = (value: Date | string | null) =>
  value === null ? text(null) : html`<time>${typeof value === "string" ? value : value.toISOString()}</time>`;
const status = (value: string) => html`<span class="status-${value}" data-testid="status">${value}</span>`;

/** Inputs every row action of one entitlement sends. */
const target = (userId: string, sku: string) =>
  html`<input type="hidden" name="user_id" value="${userId}"><input type="hidden" name="stock_keeping_unit" value="${sku}">`;

/** Only an entitlement that expires can be extended: the command refuses one without an expiry. */
const extendForm = (userId: string, sku: string, formFields: () => Html) =>
  html`<form method="post" action="/console/actions/extend" class="inline" data-testid="extend-form">
${formFields()}${target(userId, sku)}
<input type="text" name="expires_at" placeholder="2030-01-01T00:00:00Z" required>
<input type="text" name="reason" placeholder="reason" required maxlength="64">
<button type="submit">Extend</button></form>`;

export function entitlementsTable(
  userId: string,
  items: readonly EntitlementSummary[],
  canWrite: boolean,
  formFields: () => Html,
): Html {
  if (items.length === 0) return html`<p data-testid="no-entitlements">No entitlements.</p>`;
  const actions = (e: EntitlementSummary) =>
    !canWrite || e.status !== "ACTIVE"
      ? ""
      : html`<form method="post" action="/console/actions/revoke" class="inline" data-testid="revoke-form">
${formFields()}${target(userId, e.stock_keeping_unit)}
<input type="text" name="reason" placeholder="reason" required maxlength="64">
<button type="submit">Revoke</button></form>
${e.expires_at === null ? "" : extendForm(userId, e.stock_keeping_unit, formFields)}`;
  const rows = items.map(
    (e) => html`<tr data-testid="entitlement-row">
<td data-testid="sku"><a href="${consoleHref("/console/history", { user_id: userId, sku: e.stock_keeping_unit })}">${text(e.stock_keeping_unit)}</a></td>
<td>${status(e.status)}</td><td>${e.version}</td><td>${instant(e.expires_at)}</td><td>${instant(e.updated_at)}</td>
<td>${actions(e)}</td></tr>`,
  );
  return html`<table><thead><tr><th>SKU</th><th>status</th><th>version</th><th>expires at</th><th>updated</th><th></th></tr></thead>
<tbody>${rows}</tbody></table>`;
}

export function grantForm(userId: string, formFields: () => Html): Html {
  return html`<form method="post" action="/console/actions/grant" data-testid="grant-form"><fieldset>
<legend>Grant an item (compensation)</legend>
${formFields()}<input type="hidden" name="user_id" value="${userId}">
<label>SKU <input type="text" name="stock_keeping_unit" required maxlength="128"></label>
<label>Reason <input type="text" name="reason" required maxlength="64" placeholder="e.g. support-compensation"></label>
<label>Purchase or ticket id <input type="text" name="purchase_id" maxlength="128" placeholder="optional"></label>
<label>Expires at <input type="text" name="expires_at" placeholder="optional, 2030-01-01T00:00:00Z"></label>
<button type="submit">Grant</button>
</fieldset></form>`;
}

export function pointsSection(
  points: PointsResponse,
  open: readonly OpenReservation[],
  canWrite: boolean,
  formFields: () => Html,
): Html {
  const ledger = points.transactions.map(
    (t) =>
      html`<tr><td>${instant(t.created_at)}</td><td>${t.point_amount}</td><td>${text(t.reason)}</td><td>${text(t.reservation_id)}</td></tr>`,
  );
  const reservations = open.map(
    (r) => html`<tr data-testid="reservation-row"><td>${text(r.reservation_id)}</td><td>${status(r.status)}</td>
<td>${r.point_amount}</td><td>${instant(r.execute_at)}</td><td>${text(r.reason)}</td><td>${text(r.last_error)}</td>
<td>${
      canWrite && r.status === "PENDING"
        ? html`<form method="post" action="/console/actions/cancel" class="inline">${formFields()}
<input type="hidden" name="user_id" value="${points.user_id}"><input type="hidden" name="reservation_id" value="${r.reservation_id}">
<button type="submit">Cancel</button></form>`
        : ""
    }</td></tr>`,
  );
  return html`<h2>Points</h2><p>Balance: <strong data-testid="balance">${points.balance}</strong></p>
<h3>Open reservations</h3>
${reservations.length === 0 ? html`<p>None.</p>` : html`<table><thead><tr><th>reservation</th><th>status</th><th>points</th><th>executes at</th><th>reason</th><th>last error</th><th></th></tr></thead><tbody>${reservations}</tbody></table>`}
<h3>Ledger (latest ${points.transactions.length})</h3>
${ledger.length === 0 ? html`<p>No transactions.</p>` : html`<table><thead><tr><th>at</th><th>points</th><th>reason</th><th>reservation</th></tr></thead><tbody>${ledger}</tbody></table>`}`;
}

export const lookupForm = (userId: string | undefined) =>
  html`<form method="get" action="/console/users" data-testid="lookup-form">
<label>User id <input type="text" name="user_id" value="${userId ?? ""}" required maxlength="128"></label>
<button type="submit">Look up</button></form>`;
