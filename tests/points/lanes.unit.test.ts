// The scheduler's split of a batch into lanes (one transaction each): every lock key in exactly one lane, each lane
// in key order, never more lanes than asked for. These properties are what keep two transactions from deadlocking.
import { expect, test } from "bun:test";
import fc from "fast-check";
import { lanesByLockKey } from "../../src/entitlement/work/scheduler/execute.ts";
import type { ClaimedItem } from "../../src/entitlement/work/scheduler/kind.ts";

const item = (id: number, lockKey: string): ClaimedItem => ({
  id: String(id),
  attemptCount: 1,
  scheduledAt: new Date(0),
  exhausted: false,
  lockKey,
});

test("lanes keep each lock key together, in key order, and use at most the lanes asked for", () => {
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom("a", "b", "c", "d", "e", "f", "g"), { maxLength: 60 }),
      fc.integer({ min: 1, max: 8 }),
      (keys, n) => {
        const lanes = lanesByLockKey(
          keys.map((k, i) => item(i, k)),
          n,
        );
        expect(lanes.length).toBeLessThanOrEqual(n);
        expect(lanes.flat().length, "no item lost or duplicated").toBe(keys.length);
        const laneOf = new Map<string, number>();
        lanes.forEach((lane, i) => {
          const sorted = [...lane].sort((a, b) => (a.lockKey < b.lockKey ? -1 : a.lockKey > b.lockKey ? 1 : 0));
          expect(
            lane.map((x) => x.lockKey),
            "a lane runs in key order",
          ).toEqual(sorted.map((x) => x.lockKey));
          for (const x of lane) {
            expect(laneOf.get(x.lockKey) ?? i, `key ${x.lockKey} is in one lane only`).toBe(i);
            laneOf.set(x.lockKey, i);
          }
        });
      },
    ),
  );
});

test("a batch of distinct keys is spread over the lanes", () => {
  const lanes = lanesByLockKey(
    Array.from({ length: 100 }, (_, i) => item(i, `u${String(i).padStart(3, "0")}`)),
    4,
  );
  expect(lanes.map((l) => l.length)).toEqual([25, 25, 25, 25]);
});
