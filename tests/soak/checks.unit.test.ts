import { describe, expect, test } from "bun:test";
import { definite, finalAnswer, needsSettling, retryAfterSeconds } from "../drills/client.ts";
import { checkEvents } from "../drills/ledger.ts";
import { endpointMisses, missesText, passedVerdict, sendLedger, streamGaps, verdictLine } from "./checks.ts";
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
    expect(endpointMisses(stored, { accepted: new Set(["a", "b", "c"]) }).total).toBe(0);
    expect(endpointMisses(stored, { accepted: new Set(["a", "c"]) }).total).toBe(1);
  });

  test("an endpoint of some types is held only to those", () => {
    const grantsOnly = { types: ["EntitlementGranted"], accepted: new Set(["a"]) };
    expect(endpointMisses(stored, grantsOnly).total, "c is a grant it never got; b is not its type").toBe(1);
  });

  test("with the delivery rows, a miss says why: no row, unfinished, FAILED, or SENT but never received", () => {
    const all = { accepted: new Set(["a"]) };
    const done = new Map([
      ["a", "SENT"],
      ["b", "SENT"],
      ["c", "SENT"],
    ]);
    expect(endpointMisses(stored, { accepted: new Set(["a", "b", "c"]) }, done).total).toBe(0);
    expect(endpointMisses(stored, all, done), "b and c SENT, yet the receiver has neither").toMatchObject({
      total: 2,
      notReceived: 2,
    });
    const rows = new Map([
      ["a", "SENT"],
      ["b", "FAILED"],
    ]);
    expect(endpointMisses(stored, all, rows), "b ran out of attempts; c has no row").toMatchObject({
      total: 2,
      failed: 1,
      noRow: 1,
    });
    const behind = new Map([
      ["a", "SENT"],
      ["b", "PENDING"],
      ["c", "PROCESSING"],
    ]);
    expect(endpointMisses(stored, all, behind), "still queued when the wait ended").toMatchObject({
      total: 2,
      unfinished: 2,
    });
    const receivedEarly = { accepted: new Set(["a", "b", "c"]) };
    expect(
      endpointMisses(stored, receivedEarly, behind).unfinished,
      "a delivery not finished is a miss even when an earlier attempt reached the receiver",
    ).toBe(2);
  });

  test("the line names each endpoint's misses and why", () => {
    const none = { total: 0, noRow: 0, unfinished: 0, failed: 0, notReceived: 0 };
    expect(missesText("healthy", none)).toBe("healthy 0");
    expect(missesText("flaky", { ...none, total: 12, unfinished: 10, failed: 2 })).toBe(
      "flaky 12 (unfinished 10, FAILED 2)",
    );
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

describe("a retry after a refusal with Retry-After", () => {
  test("waits at least the Retry-After, at most a minute of it, and the growing pause when that is longer", () => {
    expect(
      retryPauseMs(0, () => 0.5, 5),
      "a 429 asking 5 s is not tried again after half a second",
    ).toBe(5_000);
    expect(
      retryPauseMs(3, () => 0.5, 1),
      "the growing pause is already longer",
    ).toBe(4_000);
    expect(
      retryPauseMs(0, () => 0.5, 3_600),
      "a Retry-After of an hour waits a minute",
    ).toBe(60_000);
  });

  test("Retry-After is read as whole seconds only", () => {
    expect(retryAfterSeconds("3")).toBe(3);
    expect(retryAfterSeconds(" 12 ")).toBe(12);
    expect(retryAfterSeconds(null)).toBeUndefined();
    expect(retryAfterSeconds("Wed, 21 Oct 2026 07:28:00 GMT")).toBeUndefined();
    expect(retryAfterSeconds("-1")).toBeUndefined();
  });
});

describe("a grant's definite answer", () => {
  const answer = (status: number) => ({ status, body: {}, text: "" });
  const grant = (first: ReturnType<typeof answer> | undefined, settled?: ReturnType<typeof answer>) => ({
    kind: "fresh" as const,
    action: "grants" as const,
    key: "k",
    body: { user_id: "u", stock_keeping_unit: "s", reason: "r", purchase_id: "s" },
    replica: "",
    startedAt: 0,
    ms: 0,
    answer: first,
    settled,
  });

  test("a 429 is not definite: an earlier attempt under the key may have committed", () => {
    expect(definite(answer(429))).toBe(false);
    expect(definite(answer(503))).toBe(false);
    expect(definite(undefined)).toBe(false);
    expect([200, 400, 409].every((s) => definite(answer(s)))).toBe(true);
    expect(needsSettling(grant(answer(429))), "a first answer of 429 is settled with the key").toBe(true);
  });

  test("the replay's 200 after a 429 counts, not the 429", () => {
    expect(finalAnswer(grant(answer(429), answer(200)))?.status).toBe(200);
    expect(finalAnswer(grant(undefined, answer(200)))?.status).toBe(200);
    expect(finalAnswer(grant(answer(409)))?.status, "a definite first answer stands").toBe(409);
  });
});

describe("checkEvents (the grants' and revokes' outbox against the 200s)", () => {
  const run = (accepted: string[], events: string[]) => {
    const found = { lost: 0, duplicated: 0, unacknowledged: 0, problems: [] as string[] };
    checkEvents(accepted, events, (kind, count, what) => {
      found[kind] += count;
      found.problems.push(`${kind}: ${what}`);
    });
    return found;
  };

  test("each 200 with its one event is neither lost, duplicated nor unacknowledged", () => {
    expect(run(["u|a|0", "u|a|1", "v|b|0"], ["u|a|0", "u|a|1", "v|b|0"])).toMatchObject({
      lost: 0,
      duplicated: 0,
      unacknowledged: 0,
    });
  });

  test("an event no 200 explains is an unacknowledged change, not a duplicate", () => {
    const found = run(["u|a|0"], ["u|a|0", "u|a|1"]);
    expect(found, "the revoke committed; its retries never got the 200").toMatchObject({
      duplicated: 0,
      unacknowledged: 1,
    });
    expect(found.problems).toEqual(["unacknowledged: outbox event that no 200 answer explains: u|a|1"]);
  });

  test("two events of one acknowledged change are duplicated; a 200 without its event is lost", () => {
    expect(run(["u|a|0"], ["u|a|0", "u|a|0"])).toMatchObject({ duplicated: 1, unacknowledged: 0, lost: 0 });
    expect(run(["u|a|0", "u|a|1"], ["u|a|0"])).toMatchObject({ lost: 1, duplicated: 0 });
    expect(run([], ["u|a|0", "u|a|0"]), "two events nobody acknowledged: one extra, one unknown").toMatchObject({
      duplicated: 1,
      unacknowledged: 1,
    });
  });
});
