// Applies a planned bulk file through the API's command path (executeCommand, executeBundle): the same functions, the
// same audit rows, events and idempotency records as the API's grants and revokes, under the caller given (the
// console's `console:<token>`, the shell's `cli:bulk`), with keys in the file's key space (BULK_KEY_SCOPE), not the
// caller's. Batches run `concurrency` at a time; a batch the database
// could not take (connection lost, deadlock) is tried again a few times, then its rows are `failed`, and the run goes
// on: running the file again retries exactly those.
import { isTransientDbError } from "../../../shared/db.ts";
import { ApiError } from "../../../shared/http/errors.ts";
import type { Logger } from "../../../shared/logger.ts";
import { sleep } from "../../../shared/runtime.ts";
import { activeTraceId, contextInTrace, inSpan } from "../../../shared/trace-context.ts";
import { type BundleReply, executeBundle } from "../bundles/service.ts";
import type { CommandDeps } from "../commands/run.ts";
import { executeCommand, type GrantReply } from "../entitlements/service.ts";
import { BULK_KEY_SCOPE, type BulkBatch, batchChanges } from "./batches.ts";
import { invalidResult, type RowResult, resultOf, resultsOfReply } from "./outcome.ts";
import type { BulkPlan } from "./plan.ts";
import { countOutcomes, type ResultCounts } from "./result-csv.ts";

export type BulkDeps = CommandDeps & {
  log: Logger;
  /** Runs each command (the console passes its gate, so a bulk run queues with the API's requests). */
  run?: <T>(work: () => Promise<T>) => Promise<T>;
};

export type BulkRun = {
  caller: string;
  /** The run's own W3C trace id (newTraceId): its audit rows, events and log lines carry it. */
  traceId: string;
  concurrency: number;
  /** Rows done so far, after each batch, and what they came to (invalid rows count from the start). */
  onProgress?: (done: number, total: number, counts: Readonly<ResultCounts>) => void;
  signal?: AbortSignal;
};

const ATTEMPTS = 4;

function sendBatch(deps: BulkDeps, batch: BulkBatch, run: BulkRun): Promise<GrantReply | BundleReply> {
  const [first, ...rest] = batch.changes;
  if (!first) throw new Error("an empty batch");
  const keyed = {
    idempotencyKey: batch.idempotencyKey,
    keyScope: BULK_KEY_SCOPE,
    traceId: run.traceId,
    caller: run.caller,
  };
  if (rest.length === 0) return executeCommand(deps, { action: first.action, body: first.body, ...keyed });
  const { user_id, reason, purchase_id, expires_at } = first.body;
  const skus = batch.changes.map((c) => c.body.stock_keeping_unit);
  const body = { user_id, stock_keeping_units: skus, reason, purchase_id, ...(expires_at ? { expires_at } : {}) };
  return executeBundle(deps, { body, ...keyed });
}

async function applyBatch(deps: BulkDeps, batch: BulkBatch, run: BulkRun): Promise<RowResult[]> {
  const through = deps.run ?? ((work) => work());
  for (let attempt = 1; ; attempt++) {
    try {
      return resultsOfReply(batch.changes, await through(() => sendBatch(deps, batch, run)));
    } catch (error) {
      if (error instanceof ApiError && error.status === 400) {
        return batch.changes.map((c) => resultOf(c, "invalid", { error: error.message }));
      }
      const retry = isTransientDbError(error) || (error instanceof ApiError && error.status === 503);
      if (!retry || attempt === ATTEMPTS || run.signal?.aborted) {
        deps.log.warn({ err: error, lines: batch.changes.map((c) => c.line) }, "bulk batch failed");
        const message = error instanceof Error ? error.message : String(error);
        return batch.changes.map((c) => resultOf(c, "failed", { error: message }));
      }
      await sleep(100 * 2 ** attempt, run.signal).catch(() => undefined);
    }
  }
}

/**
 * The logger of a run: inside its span the logger's mixin adds the run's trace_id; where no tracer is installed (no
 * span is active, so the mixin adds nothing) it is bound here, so a run's lines carry its trace either way.
 */
export function runLogger(log: Logger, traceId: string): Logger {
  return activeTraceId() === traceId ? log : log.child({ trace_id: traceId });
}

async function applyBatches(deps: BulkDeps, plan: BulkPlan, run: BulkRun): Promise<RowResult[]> {
  const batches = batchChanges(plan.file.hash, plan.changes);
  const results = plan.invalid.map(invalidResult);
  const counts = countOutcomes(results);
  const total = plan.file.rows.length;
  let next = 0;
  const worker = async () => {
    while (next < batches.length && !run.signal?.aborted) {
      const batch = batches[next++] as BulkBatch;
      const rows = await applyBatch(deps, batch, run);
      results.push(...rows);
      for (const row of rows) counts[row.outcome]++;
      run.onProgress?.(results.length, total, counts);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, run.concurrency) }, worker));
  return results.sort((a, b) => a.line - b.line);
}

/**
 * Every row's result in the file's order, invalid rows included. The run is a trace of its own (`run.traceId`, made
 * by newTraceId): its commands' audit rows, events and log lines carry it, not the trace of the request that started
 * it.
 */
export function applyBulk(deps: BulkDeps, plan: BulkPlan, run: BulkRun): Promise<RowResult[]> {
  const attributes = { "bulk.rows": plan.file.rows.length, "bulk.caller": run.caller };
  return inSpan("bulk run", { parent: contextInTrace(run.traceId), attributes }, async () => {
    const log = runLogger(deps.log, run.traceId);
    log.info({ caller: run.caller, rows: plan.file.rows.length, file_sha256: plan.file.hash }, "bulk run started");
    const results = await applyBatches({ ...deps, log }, plan, run);
    log.info({ caller: run.caller, ...countOutcomes(results) }, "bulk run finished");
    return results;
  });
}
