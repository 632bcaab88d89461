// The bulk pages' HTML: the upload form, the preview (counts, invalid rows, the apply button) and a run's progress
// and result. Values from the file go through `text` as every value from outside does.
import { consoleHref, type Html, html, text } from "../../shared/console/html.ts";
import { MAX_BULK_ROWS } from "../features/bulk/csv.ts";
import type { RowResult } from "../features/bulk/outcome.ts";
import type { PlanCounts } from "../features/bulk/plan.ts";
import type { ResultCounts } from "../features/bulk/result-csv.ts";
import type { InvalidRow } from "../features/bulk/rows.ts";
import type { BulkJob } from "./bulk-store.ts";

/** Rows listed on a page; the result CSV has them all. */
const LISTED = 200;

export const bulkForm = (formFields: () => Html) =>
  html`<p>A CSV file with the columns <code>user_id,stock_keeping_unit,action,reason</code> and optionally
<code>expires_at</code>; <code>action</code> is <code>grant</code> or <code>revoke</code>; at most ${MAX_BULK_ROWS} rows.
Uploading shows what would change; nothing changes until you apply.</p>
<form method="post" action="/console/bulk/upload" enctype="multipart/form-data" data-testid="bulk-form">
${formFields()}<label>CSV file <input type="file" name="file" accept=".csv,text/csv" required></label>
<button type="submit">Preview</button></form>`;

const invalidTable = (rows: readonly { line: number; user_id?: string; error: string | null }[]) =>
  rows.length === 0
    ? ""
    : html`<table><thead><tr><th>line</th><th>user</th><th>error</th></tr></thead><tbody>${rows
        .slice(0, LISTED)
        .map(
          (r) =>
            html`<tr data-testid="bulk-invalid-row"><td>${r.line}</td><td>${text(r.user_id ?? null)}</td><td class="error-text">${text(r.error)}</td></tr>`,
        )}</tbody></table>${rows.length > LISTED ? html`<p>and ${rows.length - LISTED} more.</p>` : ""}`;

/**
 * The apply button says what it will change, not how many rows are valid: rows already in their state stay as they
 * are. It stays offered when none will change, since applying a file again replays its rows' keys (and finishes a run
 * cut short).
 */
const applyLabel = (willChange: number) =>
  willChange === 0
    ? "Apply: no row will change"
    : `Apply: ${willChange} ${willChange === 1 ? "row" : "rows"} will change`;

export function previewView(
  upload: { id: string; fileName: string },
  counts: PlanCounts,
  invalid: readonly InvalidRow[],
  formFields: () => Html,
): Html {
  const valid = counts.willChange + counts.unchanged;
  const rows = invalid.map((r) => ({ line: r.line, user_id: r.fields.user_id, error: r.error }));
  return html`<p>${text(upload.fileName)}: ${counts.rows} rows.</p>
<table><tbody>
<tr><th>will change</th><td data-testid="bulk-will-change">${counts.willChange}</td></tr>
<tr><th>already in that state</th><td data-testid="bulk-unchanged">${counts.unchanged}</td></tr>
<tr><th>invalid</th><td data-testid="bulk-invalid">${counts.invalid}</td></tr>
</tbody></table>
${invalidTable(rows)}
${
  valid === 0
    ? html`<p>No valid row: nothing to apply.</p>`
    : html`<form method="post" action="/console/bulk/apply">${formFields()}
<input type="hidden" name="upload" value="${upload.id}">
<button type="submit" data-testid="bulk-apply">${applyLabel(counts.willChange)}</button></form>`
}
<p><a href="/console/bulk">another file</a></p>`;
}

const OUTCOMES: readonly (keyof ResultCounts)[] = ["changed", "already_applied", "unchanged", "invalid", "failed"];

export function jobView(job: BulkJob, counts: ResultCounts | undefined): Html {
  const progress = html`<p>${text(job.fileName)}: <span data-testid="bulk-progress">${job.done}/${job.total}</span> rows done
(trace <code data-testid="bulk-trace-id">${job.traceId}</code>).</p>`;
  if (job.error)
    return html`${progress}<p class="notice error">The run stopped: ${text(job.error)}. Apply the file again.</p>`;
  if (!job.results || !counts) return html`${progress}<p>Applying… this page reloads by itself.</p>`;
  const problems: RowResult[] = job.results.filter((r) => r.outcome === "failed" || r.outcome === "invalid");
  return html`${progress}<section data-testid="bulk-result"><h2>Result</h2>
<table><tbody>${OUTCOMES.map(
    (o) => html`<tr><th>${o.replace("_", " ")}</th><td data-testid="bulk-result-${o}">${counts[o]}</td></tr>`,
  )}</tbody></table>
<p><a href="${consoleHref("/console/bulk/result.csv", { job: job.id })}" download>Download the result (CSV)</a></p>
${invalidTable(problems)}</section>
<p><a href="/console/bulk">another file</a></p>`;
}
