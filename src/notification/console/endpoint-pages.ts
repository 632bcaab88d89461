// The console's webhook endpoints: the list (state, what waits, what failed), an endpoint's recent attempts, and a
// replay of a time window. Reads are the operator subcommands' statements; the replay is the admin API's own.
import { consoleHref, type Html, html, sentence, text } from "../../shared/console/html.ts";
import type { Action, Page } from "../../shared/console/kit.ts";
import type { Sql } from "../../shared/db.ts";
import { badRequest } from "../../shared/http/errors.ts";
import { isUuid } from "../../shared/ids.ts";
import type { Logger } from "../../shared/logger.ts";
import type { Clock } from "../../shared/runtime.ts";
import { findEndpoint, listEndpointSummaries } from "../features/endpoints/queries.ts";
import { listAttempts } from "../features/endpoints/replay-queries.ts";
import { replay } from "../features/endpoints/service.ts";
import type { Operator } from "./pages.ts";

const SHOWN = 100;
const at = (value: Date | null) => (value === null ? text(null) : html`<time>${value.toISOString()}</time>`);
const attemptsHref = (id: string) => consoleHref("/console/endpoints/attempts", { endpoint_id: id });

const replayForm = (formFields: () => Html, endpointId: string) =>
  html`<form method="post" action="/console/endpoints/replay" data-testid="replay-form">${formFields()}
<input type="hidden" name="endpoint_id" value="${endpointId}">
<label>Since <input type="text" name="since" required placeholder="2026-11-27T00:00:00Z"></label>
<label>Until <input type="text" name="until" placeholder="now"></label>
<label><input type="checkbox" name="only_failed" value="true"> only failed</label>
<button type="submit">Replay</button></form>`;

function endpointIdOf(value: string | null): string {
  if (value === null || !isUuid(value)) throw badRequest("endpoint_id must be a UUID");
  return value.toLowerCase();
}

export function endpointPages(sql: Sql): Record<string, Page<Operator>> {
  return {
    "/console/endpoints": async () => {
      const rows = (await listEndpointSummaries(sql, { limit: SHOWN })).map(
        (
          e,
        ) => html`<tr data-testid="endpoint-row"><td><a href="${attemptsHref(e.endpoint_id)}">${e.endpoint_id}</a></td>
<td>${text(e.url)}</td><td>${text(e.event_types?.join(", ") ?? "every type")}</td>
<td>${e.enabled ? "enabled" : html`<span class="status-FAILED">disabled</span>`}</td><td>${e.pending}</td><td>${e.failed}</td>
<td>${at(e.failing_since)}</td><td class="error-text">${text(e.disabled_reason)}</td></tr>`,
      );
      const body =
        rows.length === 0
          ? html`<p data-testid="no-endpoints">No webhook endpoints.</p>`
          : html`<table><thead><tr><th>endpoint</th><th>url</th><th>types</th><th>state</th><th>waiting</th><th>failed</th><th>failing since</th><th>disabled because</th></tr></thead><tbody>${rows}</tbody></table>`;
      return { title: "Webhook endpoints", body };
    },
    "/console/endpoints/attempts": async ({ query, formFields }) => {
      const endpointId = endpointIdOf(query.get("endpoint_id"));
      const endpoint = await findEndpoint(sql, endpointId);
      if (!endpoint) return { title: "Endpoint", body: html`<p data-testid="no-endpoint">No such endpoint.</p>` };
      const rows = (await listAttempts(sql, { endpointId, limit: SHOWN })).map(
        (a) => html`<tr data-testid="attempt-row"><td>${a.notification_id}</td><td>${a.attempt}</td><td>${at(a.at)}</td>
<td>${text(a.status_code === null ? null : String(a.status_code))}</td><td>${a.duration_ms}</td>
<td class="error-text">${text(a.error)}</td><td class="error-text">${text(a.response_excerpt?.slice(0, 200) ?? null)}</td></tr>`,
      );
      const body = html`<h2>${text(endpoint.url)}</h2>${replayForm(formFields, endpointId)}
${rows.length === 0 ? html`<p data-testid="no-attempts">No attempts yet.</p>` : html`<table><thead><tr><th>notification</th><th>attempt</th><th>at</th><th>status</th><th>ms</th><th>error</th><th>answer</th></tr></thead><tbody>${rows}</tbody></table>`}`;
      return { title: `Recent attempts (latest ${SHOWN})`, body };
    },
  };
}

export function endpointActions(
  sql: Sql,
  log: Logger,
  options: { now: Clock; allowPrivate: boolean; onDue?: () => void },
): Record<string, Action<Operator>> {
  return {
    "/console/endpoints/replay": async ({ form, principal }) => {
      const endpointId = endpointIdOf(form.get("endpoint_id"));
      const back = attemptsHref(endpointId);
      const until = form.get("until") || undefined;
      const body = { since: form.get("since") ?? "", until, only_failed: form.get("only_failed") === "true" };
      const accepted = await replay({ sql, ...options }, endpointId, body);
      log.info(
        { caller: `console:${principal.name}`, endpoint_id: endpointId, replay_id: accepted.replay_id },
        "console endpoint replay",
      );
      const notice = {
        ok: true,
        text: sentence`replay ${accepted.replay_id}: ${accepted.notifications} notification(s) sent again`,
      };
      return { redirect: back, notice };
    },
  };
}
