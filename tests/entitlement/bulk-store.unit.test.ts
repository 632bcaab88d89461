// The console's bulk uploads and runs: each is seen only by the token name that made it, for an hour; each operator
// keeps a bounded number (their own oldest goes first), and the whole store a bounded number, which one operator can
// never make another lose: when it is full, a newcomer is refused instead.
import { expect, test } from "bun:test";
import { createBulkStore, MAX_KEPT_PER_OPERATOR, MAX_KEPT_TOTAL } from "../../src/entitlement/console/bulk-store.ts";
import type { BulkPlan } from "../../src/entitlement/features/bulk/plan.ts";

const plan = {} as BulkPlan;

test("an upload belongs to its token name, for an hour", () => {
  let now = 0;
  const store = createBulkStore(() => now);
  const mine = store.addUpload({ owner: "alice", fileName: "a.csv", plan });
  expect(store.upload(mine?.id ?? "", "alice")?.fileName).toBe("a.csv");
  expect(store.upload(mine?.id ?? "", "bob"), "another token sees nothing").toBeUndefined();
  expect(store.upload("made-up", "alice")).toBeUndefined();
  now += 3_600_001;
  expect(store.upload(mine?.id ?? "", "alice"), "gone after an hour").toBeUndefined();
});

test("an operator keeps a bounded number; their own oldest goes first", () => {
  const store = createBulkStore(() => 0);
  const jobs = Array.from({ length: MAX_KEPT_PER_OPERATOR + 1 }, (_, i) =>
    store.addJob({ owner: "alice", fileName: `${i}.csv`, total: 1 }),
  );
  expect(store.job(jobs[0]?.id ?? "", "alice")).toBeUndefined();
  expect(store.job(jobs[MAX_KEPT_PER_OPERATOR]?.id ?? "", "alice")?.done).toBe(0);
  expect(store.job(jobs[1]?.id ?? "", "alice")?.fileName).toBe("1.csv");
});

test("one operator's uploads and runs never evict another's", () => {
  const store = createBulkStore(() => 0);
  const upload = store.addUpload({ owner: "alice", fileName: "alice.csv", plan });
  const job = store.addJob({ owner: "alice", fileName: "alice.csv", total: 1 });
  for (let i = 0; i < MAX_KEPT_TOTAL * 2; i++) {
    store.addUpload({ owner: "bob", fileName: `${i}.csv`, plan });
    store.addJob({ owner: "bob", fileName: `${i}.csv`, total: 1 });
  }
  expect(store.upload(upload?.id ?? "", "alice")?.fileName, "alice's preview is still there").toBe("alice.csv");
  expect(store.job(job?.id ?? "", "alice")?.fileName, "alice's result is still there").toBe("alice.csv");
});

test("a full store refuses a newcomer instead of evicting anyone, and takes them again once entries expire", () => {
  let now = 0;
  const store = createBulkStore(() => now);
  const owners = Array.from({ length: MAX_KEPT_TOTAL / MAX_KEPT_PER_OPERATOR }, (_, i) => `op${i}`);
  const kept = owners.flatMap((owner) =>
    Array.from({ length: MAX_KEPT_PER_OPERATOR }, (_, i) => store.addUpload({ owner, fileName: `${i}.csv`, plan })),
  );
  expect(kept.every((u) => u !== undefined)).toBe(true);
  expect(store.addUpload({ owner: "newcomer", fileName: "n.csv", plan }), "refused: the store is full").toBeUndefined();
  const still = kept.filter((u) => u && store.upload(u.id, u.owner));
  expect(still.length, "nobody lost an upload to the newcomer").toBe(MAX_KEPT_TOTAL);
  expect(
    store.addUpload({ owner: "op0", fileName: "again.csv", plan }),
    "an operator may replace their own",
  ).toBeDefined();
  now += 3_600_001;
  expect(store.addUpload({ owner: "newcomer", fileName: "n.csv", plan }), "room again after an hour").toBeDefined();
});
