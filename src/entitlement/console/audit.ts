// /console/audit: the audit log searched by user, SKU, caller, action and time range, newest first, a page at a time
// (read scope). The form is a GET, so a search is a link that can be shared.
import type { Caller } from "../../shared/auth/guard.ts";
import { consoleHref, type Html, html, text } from "../../shared/console/html.ts";
import type { Page } from "../../shared/console/kit.ts";
import { throughGate } from "../edge/route-deps.ts";
import type { AuditEntry } from "../features/audit/queries.ts";
import { readAuditFilter, searchAuditPage } from "../features/audit/search.ts";
import type { RouteDeps } from "../features/commands/run.ts";
import { requireScope } from "./pages.ts";

const FIELDS = ["user_id", "sku", "caller", "action", "from", "to"] as const;

function searchForm(query: URLSearchParams): Html {
  const input = (name: string, label: string, placeholder = "") =>
    html`<label>${label} <input type="text" name="${name}" value="${query.get(name) ?? ""}" placeholder="${placeholder}" maxlength="200"></label>`;
  return html`<form method="get" action="/console/audit" data-testid="audit-search"><fieldset>
${input("user_id", "User id")}${input("sku", "SKU")}${input("caller", "Caller", "console:support-lead, or console:* for every console operator")}
${input("action", "Action", "GRANT, REVOKE, EXTEND, EXPIRE")}
${input("from", "From", "2026-11-01T00:00:00Z")}${input("to", "Before", "2026-12-01T00:00:00Z")}
<button type="submit">Search</button></fieldset></form>`;
}

// Shown to the millisecond, as every time of the API and the console; the microseconds stay in the page key only.
const row = (e: AuditEntry) => html`<tr data-testid="audit-row"><td><time>${e.occurred_at.toISOString()}</time></td>
<td><a href="${consoleHref("/console/history", { user_id: e.user_id, sku: e.stock_keeping_unit })}">${text(e.user_id)}</a></td>
<td>${text(e.stock_keeping_unit)}</td><td>${e.action}</td><td>${e.version ?? ""}</td><td>${text(e.source)}</td>
<td>${text(e.source_id)}</td><td>${text(e.caller)}</td><td>${text(e.trace_id)}</td></tr>`;

export function auditPages(deps: RouteDeps): Record<string, Page<Caller>> {
  return {
    "/console/audit": async ({ principal, query }) => {
      requireScope(principal, "read");
      const filter = readAuditFilter(query);
      const page = await throughGate(deps, () =>
        searchAuditPage(deps.sql, { filter, cursor: query.get("cursor") ?? undefined }),
      );
      const kept = Object.fromEntries(FIELDS.map((f) => [f, query.get(f) || undefined]));
      const next = page.nextCursor && consoleHref("/console/audit", { ...kept, cursor: page.nextCursor });
      const table =
        page.entries.length === 0
          ? html`<p data-testid="audit-none">No audit rows match.</p>`
          : html`<table><thead><tr><th>at (UTC)</th><th>user</th><th>SKU</th><th>action</th><th>version</th><th>reason</th>
<th>source id</th><th>caller</th><th>trace</th></tr></thead><tbody>${page.entries.map(row)}</tbody></table>`;
      const body = html`${searchForm(query)}${table}
${next ? html`<p><a href="${next}" data-testid="audit-next">older</a></p>` : ""}`;
      return { title: "Audit log", body };
    },
  };
}
