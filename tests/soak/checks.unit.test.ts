import { describe, expect, test } from "bun:test";
import { endpointMisses, passedVerdict, streamGaps, verdictLine } from "./checks.ts";

describe("streamGaps", () => {
  test("every seq once and in order, across a resume, is no gap", () => {
    expect(streamGaps([1, 2, 3, 4, 5], 5)).toBe(0);
    expect(streamGaps([], 0), "a player nobody notified has nothing to miss").toBe(0);
  });

  test("a seq skipped, the tail never received, a repeat and a step back each count", () => {
    expect(streamGaps([1, 2, 4, 5], 5), "seq 3 missing").toBe(1);
    expect(streamGaps([1, 2, 3], 5), "seqs 4 and 5 never arrived").toBe(2);
    expect(streamGaps([1, 2, 2, 3], 3), "seq 2 delivered twice (a resume that repeated)").toBe(1);
    expect(streamGaps([1, 3, 2], 3), "3 before 2: 2 was skipped, then came late").toBe(2);
  });
});

describe("endpointMisses", () => {
  const stored = [
    { notification_id: "a", type: "EntitlementGranted" },
    { notification_id: "b", type: "EntitlementRevoked" },
    { notification_id: "c", type: "EntitlementGranted" },
  ];

  test("an endpoint of every type must have got every notification", () => {
    expect(endpointMisses(stored, { accepted: new Set(["a", "b", "c"]) })).toBe(0);
    expect(endpointMisses(stored, { accepted: new Set(["a", "c"]) })).toBe(1);
  });

  test("an endpoint of some types is held only to those", () => {
    const grantsOnly = { types: ["EntitlementGranted"], accepted: new Set(["a"]) };
    expect(endpointMisses(stored, grantsOnly), "c is a grant it never got; b is not its type").toBe(1);
  });
});

describe("verdictLine", () => {
  const verdict = {
    minutes: 4,
    grants: 36000,
    sends: 0,
    kills: { entitlement: 1, notification: 1, "nats leader": 1, "postgres primary": 1 },
    lost: 0,
    duplicated: 0,
    streamGaps: 0,
    endpointMisses: 0,
  };

  test("the last line has the fixed shape, kills summed and listed by kind", () => {
    expect(verdictLine(verdict)).toBe(
      "soak: 4 min, 36000 grants, 0 sends, 4 kills (entitlement 1, notification 1, nats leader 1, postgres primary 1), " +
        "lost 0, duplicated 0, stream gaps 0, endpoint misses 0",
    );
    expect(passedVerdict(verdict)).toBe(true);
  });

  test("any of the four counts above 0 fails the run", () => {
    for (const key of ["lost", "duplicated", "streamGaps", "endpointMisses"] as const)
      expect(passedVerdict({ ...verdict, [key]: 1 }), `${key} 1 must fail`).toBe(false);
  });
});
