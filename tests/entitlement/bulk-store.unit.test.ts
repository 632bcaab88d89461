// The console's bulk uploads and runs: each is seen only by the token name that made it, for an hour, and at most a
// fixed number are kept (the oldest goes first).
import { expect, test } from "bun:test";
import { createBulkStore } from "../../src/entitlement/console/bulk-store.ts";
import type { BulkPlan } from "../../src/entitlement/features/bulk/plan.ts";

const plan = {} as BulkPlan;

test("an upload belongs to its token name, for an hour", () => {
  let now = 0;
  const store = createBulkStore(() => now);
  const mine = store.addUpload({ owner: "alice", fileName: "a.csv", plan });
  expect(store.upload(mine.id, "alice")?.fileName).toBe("a.csv");
  expect(store.upload(mine.id, "bob"), "another token sees nothing").toBeUndefined();
  expect(store.upload("made-up", "alice")).toBeUndefined();
  now += 3_600_001;
  expect(store.upload(mine.id, "alice"), "gone after an hour").toBeUndefined();
});

test("at most 16 are kept; the oldest goes first", () => {
  const store = createBulkStore(() => 0);
  const jobs = Array.from({ length: 17 }, (_, i) => store.addJob({ owner: "alice", fileName: `${i}.csv`, total: 1 }));
  expect(store.job(jobs[0]?.id ?? "", "alice")).toBeUndefined();
  expect(store.job(jobs[16]?.id ?? "", "alice")?.done).toBe(0);
  expect(store.job(jobs[1]?.id ?? "", "alice")?.fileName).toBe("1.csv");
});
