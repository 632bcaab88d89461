// The console's bulk files and runs, held in this process's memory as its sessions are (one replica behind sticky
// sessions sees its own): an upload keeps its checked plan until it is applied or an hour passes; a run keeps its
// progress and, once done, its per-row result for the download. Each belongs to the token name that made it, and only
// that name may see or apply it. Bounded: the oldest entries go first beyond MAX_KEPT.
import { randomToken } from "../../shared/console/session.ts";
import type { RowResult } from "../features/bulk/outcome.ts";
import type { BulkPlan } from "../features/bulk/plan.ts";

const MAX_KEPT = 16;
const KEEP_MS = 3_600_000;

export type BulkUpload = { id: string; owner: string; fileName: string; plan: BulkPlan; at: number };

export type BulkJob = {
  id: string;
  owner: string;
  fileName: string;
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
  return {
    add: (entry: T) => {
      for (const [id, e] of entries) if (now() - e.at > KEEP_MS) entries.delete(id);
      while (entries.size >= MAX_KEPT) entries.delete(entries.keys().next().value as string);
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
    addJob: (j: Omit<BulkJob, "id" | "at" | "done">) => jobs.add({ ...j, id: randomToken(18), at: now(), done: 0 }),
    job: jobs.get,
  };
}

export type BulkStore = ReturnType<typeof createBulkStore>;
