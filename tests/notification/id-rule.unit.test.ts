// One text rule for ids in both services: every user id the Entitlement API accepts is one Notification's consumer
// stores (an id accepted, credited, then dropped by the consumer would leave the user never notified), and both refuse
// the same ones. Property-based over strings rich in control, format and blank characters.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { UserId } from "../../src/entitlement/features/entitlements/model.ts";
import { checkField } from "../../src/entitlement/features/entitlements/validation.ts";
import { validUserId } from "../../src/notification/features/debug-inbox/service.ts";
import { decodeEntitlementEvent } from "../../src/notification/intake/handlers/entitlement.ts";
import { decodeMatchmakingEvent } from "../../src/notification/intake/handlers/matchmaking.ts";
import { decodePointsEvent } from "../../src/notification/intake/handlers/points.ts";
import { eventBytes, matchBytes, pointsBytes } from "./helpers.ts";

const apiAccepts = (id: string) => {
  try {
    checkField("user_id", UserId, id);
    return true;
  } catch {
    return false;
  }
};
const pointsAccepts = (userId: string) => decodePointsEvent(pointsBytes({ userId })).ok;
const matchAccepts = (userId: string) => decodeMatchmakingEvent(matchBytes({ userIds: [userId] })).ok;
const entitlementAccepts = (userId: string) => decodeEntitlementEvent(eventBytes({ userId })).ok;
/** The debug inbox's and the console's rule (both call validUserId). */
const lookupAccepts = (userId: string) => {
  try {
    validUserId(userId);
    return true;
  } catch {
    return false;
  }
};

/** Characters where the rules could part: C0, DEL, C1, blanks of either trim, bidi and zero-width marks, surrogates. */
const edgy = fc.constantFrom(
  "\u0000",
  "\u0009",
  "\u001f",
  " ",
  "\u007f",
  "\u0080",
  "\u0085",
  "\u009f",
  "\u00a0",
  "\u2028",
  "\u3000",
  "\ufeff",
  "\u202e",
  "\u200b",
  "\ud800",
  "\udc00",
  "a",
  "Z",
  "_",
  "é",
  "😀",
);
const id = fc.oneof(
  fc.array(edgy, { maxLength: 6 }).map((parts) => parts.join("")),
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.integer({ min: 120, max: 140 }).map((n) => "u".repeat(n)),
);

describe("one id rule for both services", () => {
  test("the consumer accepts every user id the API accepts, and refuses the same ones (points, matchmaking)", () => {
    fc.assert(
      fc.property(id, (userId) => {
        // Protobuf strings are UTF-8: a lone surrogate cannot travel in an event (the API refuses it anyway).
        fc.pre(userId.isWellFormed());
        const accepted = apiAccepts(userId);
        expect(pointsAccepts(userId), JSON.stringify(userId)).toBe(accepted);
        expect(matchAccepts(userId), JSON.stringify(userId)).toBe(accepted);
        if (accepted) expect(entitlementAccepts(userId), JSON.stringify(userId)).toBe(true);
      }),
      { numRuns: 1_000 },
    );
  });

  test("the debug inbox and the console look up every user id the API accepts, and refuse the same ones", () => {
    fc.assert(
      fc.property(id, (userId) => {
        expect(lookupAccepts(userId), JSON.stringify(userId)).toBe(apiAccepts(userId));
      }),
      { numRuns: 1_000 },
    );
  });

  test.each(["u\u0085x", "\u0080", "u\u009f"])(
    "a C1 control %p is refused by the API and by the consumer",
    (userId) => {
      expect(apiAccepts(userId)).toBe(false);
      expect(pointsAccepts(userId)).toBe(false);
    },
  );

  test.each(["\u3000", "\u00a0", "\ufeff"])(
    "%p, blank to JavaScript's trim but not to Java's, is an id on both sides",
    (userId) => {
      expect(apiAccepts(userId)).toBe(true);
      expect(pointsAccepts(userId)).toBe(true);
      expect(entitlementAccepts(userId)).toBe(true);
      expect(lookupAccepts(userId), "the inbox and the console find that user too").toBe(true);
    },
  );
});
