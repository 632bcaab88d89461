import { describe, expect, test } from "bun:test";
import { endpointMisses, passedVerdict, sendLedger, streamGaps, verdictLine } from "./checks.ts";
import { pickRecipients, retryable, retryPauseMs } from "./sends.ts";

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

describe("sendLedger", () => {
  const TYPE = "SoakNotice";
  const note = (event_id: string, user_id: string, status = "SENT", type = TYPE) => ({
    notification_id: `${event_id}-${user_id}-${Math.random()}`,
    event_id,
    user_id,
    type,
    status,
    seq: 1,
  });
  const sends = [
    { requestId: "r1", userIds: ["p1", "p2"] },
    { requestId: "r2", userIds: ["p3", "p3"] },
  ];

  test("one SENT notification per 202 send and distinct recipient is neither lost nor duplicated", () => {
    const stored = [
      note("r1", "p1"),
      note("r1", "p2"),
      note("r2", "p3"),
      note("g1", "p1", "SENT", "EntitlementGranted"),
    ];
    const found = sendLedger(sends, stored, TYPE);
    expect(found, "a repeated recipient counts once; a grant's notification is not the sends' business").toMatchObject({
      lost: 0,
      duplicated: 0,
      notifications: 3,
    });
  });

  test("a recipient without its notification, or with one not SENT, is lost", () => {
    expect(sendLedger(sends, [note("r1", "p1"), note("r2", "p3")], TYPE).lost, "p2 of r1 never stored").toBe(1);
    const pending = [note("r1", "p1"), note("r1", "p2", "PENDING"), note("r2", "p3", "FAILED")];
    expect(sendLedger(sends, pending, TYPE).lost, "stored but never SENT").toBe(2);
  });

  test("a second notification of one send for one recipient, or one no 202 explains, is duplicated", () => {
    const twice = [note("r1", "p1"), note("r1", "p2"), note("r1", "p2"), note("r2", "p3")];
    expect(sendLedger(sends, twice, TYPE)).toMatchObject({ lost: 0, duplicated: 1 });
    const unexplained = [note("r1", "p1"), note("r1", "p2"), note("r2", "p3"), note("r9", "p1"), note("r1", "p3")];
    expect(sendLedger(sends, unexplained, TYPE), "r9 was never answered 202; p3 was not r1's recipient").toMatchObject({
      lost: 0,
      duplicated: 2,
    });
  });
});

describe("retryable", () => {
  test("only a refusal of the moment (5xx, 429) is sent again; any other answer is definite", () => {
    expect([500, 502, 503, 504, 429].every(retryable)).toBe(true);
    expect([200, 202, 400, 401, 403, 409, 413, 415].some(retryable)).toBe(false);
  });
});

describe("pickRecipients", () => {
  test("distinct players, never more than there are", () => {
    const players = ["a", "b", "c"];
    const picked = pickRecipients(players, 3);
    expect(new Set(picked).size).toBe(3);
    expect(pickRecipients(players, 10).sort()).toEqual(players);
  });
});

describe("retryPauseMs", () => {
  test("doubles from half a second, spread by ±50 %, and never passes 45 s", () => {
    expect(retryPauseMs(0, () => 0.5)).toBe(500);
    expect(retryPauseMs(3, () => 0.5)).toBe(4_000);
    expect(retryPauseMs(3, () => 0)).toBe(2_000);
    expect(
      retryPauseMs(20, () => 0.5),
      "capped at 30 s",
    ).toBe(30_000);
    expect(retryPauseMs(20, () => 0.999_999)).toBeLessThan(45_000);
  });
});
