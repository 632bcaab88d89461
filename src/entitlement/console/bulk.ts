// /console/bulk: a CSV file of grants and revokes, uploaded (write scope and the form's CSRF token), previewed without
// a change, then applied in the background through the API's command path (bulk/apply.ts) as the caller
// `console:<token name>`, with keys derived from the file so that applying it again changes nothing. The run's page
// reloads itself until the run is over, then shows the counts and offers the per-row result as CSV.
import { context } from "@opentelemetry/api";
import type { Caller } from "../../shared/auth/guard.ts";
import { consoleHref, sentence } from "../../shared/console/html.ts";
import type { Action, Page, UploadAction } from "../../shared/console/kit.ts";
import { downloadResponse } from "../../shared/console/respond.ts";
import { ApiError } from "../../shared/http/errors.ts";
import { contextInTrace } from "../../shared/trace-context.ts";
import { throughGate } from "../edge/route-deps.ts";
import { applyBulk, runLogger } from "../features/bulk/apply.ts";
import { BulkFileError, MAX_BULK_BYTES, readBulkFile } from "../features/bulk/csv.ts";
import { planBulk, planCounts } from "../features/bulk/plan.ts";
import { countOutcomes, resultCsv } from "../features/bulk/result-csv.ts";
import type { RouteDeps } from "../features/commands/run.ts";
import type { BulkJob, BulkStore, BulkUpload } from "./bulk-store.ts";
import { bulkForm, jobView, previewView } from "./bulk-views.ts";
import { requireScope } from "./pages.ts";
import { consoleCaller } from "./writes.ts";

/** Commands of one run in flight at once: a share of the pool, so that the API keeps its slots. */
const CONCURRENCY = 3;
/** Room for the multipart boundaries and the form's hidden fields around the file. */
const FORM_OVERHEAD = 64 * 1024;

const notFound = () => new ApiError(404, "NOT_FOUND", "No such file or run here: upload the file again.");
/** The store is full of other operators' files and runs: nobody's is evicted for a newcomer's. */
const storeFull = {
  redirect: "/console/bulk",
  notice: { ok: false, text: sentence`The console holds as many bulk files and runs as it keeps; try again later.` },
};

function startJob(deps: RouteDeps, store: BulkStore, upload: BulkUpload): BulkJob | undefined {
  const total = upload.plan.file.rows.length;
  const job = store.addJob({ owner: upload.owner, fileName: upload.fileName, total });
  if (!job) return undefined;
  const run = { caller: consoleCaller(upload.owner), traceId: job.traceId, concurrency: CONCURRENCY };
  const onProgress = (done: number) => {
    job.done = done;
  };
  // In the run's own trace, so that the failure's line carries it too.
  context.with(contextInTrace(job.traceId), () =>
    applyBulk({ ...deps, run: deps.gate.run }, upload.plan, { ...run, onProgress }).then(
      (results) => {
        job.results = results;
        job.done = job.total;
      },
      (error) => {
        runLogger(deps.log, job.traceId).error({ err: error }, "console bulk run failed");
        job.error = "the service could not finish it";
      },
    ),
  );
  return job;
}

export function bulkPages(store: BulkStore): Record<string, Page<Caller>> {
  return {
    "/console/bulk": async ({ principal, formFields }) => {
      requireScope(principal, "write");
      return { title: "Bulk changes", body: bulkForm(formFields) };
    },
    "/console/bulk/preview": async ({ principal, query, formFields }) => {
      requireScope(principal, "write");
      const upload = store.upload(query.get("upload"), principal.name);
      if (!upload) throw notFound();
      const body = previewView(upload, planCounts(upload.plan), upload.plan.invalid, formFields);
      return { title: "Bulk changes: preview", body };
    },
    "/console/bulk/run": async ({ principal, query }) => {
      requireScope(principal, "write");
      const job = store.job(query.get("job"), principal.name);
      if (!job) throw notFound();
      const over = job.results !== undefined || job.error !== undefined;
      const body = jobView(job, job.results && countOutcomes(job.results));
      return { title: "Bulk changes: run", body, ...(over ? {} : { refreshSeconds: 1 }) };
    },
    "/console/bulk/result.csv": async ({ principal, query }) => {
      requireScope(principal, "write");
      const job = store.job(query.get("job"), principal.name);
      if (!job?.results) throw notFound();
      return downloadResponse(`${job.fileName}.result.csv`, "text/csv; charset=utf-8", resultCsv(job.results));
    },
  };
}

export function bulkUploads(deps: RouteDeps, store: BulkStore): Record<string, UploadAction<Caller>> {
  const upload: Action<Caller> = async ({ principal, files }) => {
    requireScope(principal, "write");
    const given = files.get("file");
    if (!given || given.bytes.length === 0)
      return { redirect: "/console/bulk", notice: { ok: false, text: sentence`Choose a CSV file.` } };
    try {
      const file = readBulkFile(given.bytes);
      const plan = await throughGate(deps, () => planBulk(deps.sql, file, deps.now()));
      const kept = store.addUpload({ owner: principal.name, fileName: given.name || "bulk.csv", plan });
      if (!kept) return storeFull;
      return {
        redirect: consoleHref("/console/bulk/preview", { upload: kept.id }),
        notice: { ok: true, text: sentence`Nothing has changed yet.` },
      };
    } catch (error) {
      if (!(error instanceof BulkFileError)) throw error;
      return { redirect: "/console/bulk", notice: { ok: false, text: sentence`${error.message}` } };
    }
  };
  return { "/console/bulk/upload": { maxBytes: MAX_BULK_BYTES + FORM_OVERHEAD, act: upload } };
}

export function bulkActions(deps: RouteDeps, store: BulkStore): Record<string, Action<Caller>> {
  return {
    "/console/bulk/apply": async ({ principal, form }) => {
      requireScope(principal, "write");
      const upload = store.upload(form.get("upload"), principal.name);
      if (!upload) throw notFound();
      const job = startJob(deps, store, upload);
      if (!job) return storeFull;
      const started = { caller: consoleCaller(principal.name), rows: job.total, run_trace_id: job.traceId };
      deps.log.info(started, "console bulk run started");
      return {
        redirect: consoleHref("/console/bulk/run", { job: job.id }),
        notice: { ok: true, text: sentence`Applying.` },
      };
    },
  };
}
