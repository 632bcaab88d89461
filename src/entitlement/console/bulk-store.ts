// The console's bulk files and runs, held in this process's memory as its sessions are (one replica behind sticky
// sessions sees its own): an upload keeps its checked plan until it is applied or an hour passes; a run keeps its
// progress and, once done, its per-row result for the download. Each belongs to the token name that made it, and only
// that name may see or apply it. Bounded per operator (their own oldest goes first beyond MAX_KEPT_PER_OPERATOR) and
// in total (MAX_KEPT_TOTAL, a plan or result of 10,000 rows being a few MB): a full store refuses a newcomer's entry
// instead of evicting it from another operator, whose preview or result would vanish under them.
import { randomToken } from "../../shared/console/session.ts";
import { newTraceId } from "../../shared/trace-context.ts";
import type { RowResult } from "../features/bulk/outcome.ts";
import type { BulkPlan } from "../features/bulk/plan.ts";

export const MAX_KEPT_PER_OPERATOR = 8;
export const MAX_KEPT_TOTAL = 64;
const KEEP_MS = 3_600_000;

export type BulkUpload = { id: string; owner: string; fileName: string; plan: BulkPlan; at: number };

export type BulkJob = {
  id: string;
  owner: string;
  fileName: string;
  /** The run's own trace: its audit rows, events and log lines carry it. */
  traceId: string;
  total: number;
  done: number;
  /** Set when the run is over: every row's result. */
  results?: RowResult[];
  /** Set when the run stopped on an error it could not turn into rows' results. */
  error?: string;
  at: number;
};

function boundedMap<T extends { id: string; owner: string; at: number }>(now: () => number) {
  const entries = new Map<string, T>();
  const owned = (owner: string) => [...entries.values()].filter((e) => e.owner === owner);
  return {
    /** Keeps `entry`, dropping its owner's oldest when needed; undefined when the store is full of others' entries. */
    add: (entry: T): T | undefined => {
      for (const [id, e] of entries) if (now() - e.at > KEEP_MS) entries.delete(id);
      const mine = owned(entry.owner);
      const full = mine.length >= MAX_KEPT_PER_OPERATOR || entries.size >= MAX_KEPT_TOTAL;
      if (full && mine.length === 0) return undefined;
      if (full) entries.delete((mine[0] as T).id);
      entries.set(entry.id, entry);
      return entry;
    },
    /** The entry `id` if `owner` made it. */
    get: (id: string | null, owner: string) => {
      const entry = id === null ? undefined : entries.get(id);
      return entry && entry.owner === owner && now() - entry.at <= KEEP_MS ? entry : undefined;
    },
  };
}

export function createBulkStore(now: () => number = Date.now) {
  const uploads = boundedMap<BulkUpload>(now);
  const jobs = boundedMap<BulkJob>(now);
  return {
    addUpload: (u: Omit<BulkUpload, "id" | "at">) => uploads.add({ ...u, id: randomToken(18), at: now() }),
    upload: uploads.get,
    addJob: (j: Omit<BulkJob, "id" | "at" | "done" | "traceId">) =>
      jobs.add({ ...j, id: randomToken(18), at: now(), done: 0, traceId: newTraceId() }),
    job: jobs.get,
  };
}

export type BulkStore = ReturnType<typeof createBulkStore>;
