import { describe, expect, test } from "bun:test";
import { requireBearer } from "../../src/notification/edge/debug-token.ts";
import { validUserId } from "../../src/notification/features/debug-inbox/service.ts";
import { withFailureInjection } from "../../src/notification/work/channels/failure-injection.ts";
import type { Delivery } from "../../src/notification/work/channels/sender.ts";
import { webhookBody } from "../../src/notification/work/channels/webhook.ts";
import { backoffMs } from "../../src/shared/backoff.ts";
import { testConfig } from "./helpers.ts";

const delivery = (userId: string): Delivery => ({
  notificationId: crypto.randomUUID(),
  eventId: crypto.randomUUID(),
  userId,
  type: "EntitlementGranted",
  occurredAt: new Date("2026-01-17T00:00:00Z"),
  payload: { trace_id: "t" },
});

describe("failure injection", () => {
  test("throws for a user id with the prefix", async () => {
    const sent: string[] = [];
    const send = withFailureInjection(async (d) => void sent.push(d.userId), "e2e-dlq-");
    await expect(send(delivery("e2e-dlq-user-1"))).rejects.toThrow(
      "notification delivery failure injection matched userId=e2e-dlq-user-1",
    );
    expect(sent).toEqual([]);
  });

  test("delegates when the prefix does not match", async () => {
    const sent: string[] = [];
    await withFailureInjection(async (d) => void sent.push(d.userId), "e2e-dlq-")(delivery("u1"));
    expect(sent).toEqual(["u1"]);
  });

  test("a blank prefix disables it", async () => {
    const sent: string[] = [];
    await withFailureInjection(async (d) => void sent.push(d.userId), "  ")(delivery("e2e-dlq-user-1"));
    expect(sent).toEqual(["e2e-dlq-user-1"]);
  });
});

describe("delivery backoff with the default configuration", () => {
  const policy = testConfig({
    NOTIFICATION_DELIVERY_BACKOFF_BASE: "1s",
    NOTIFICATION_DELIVERY_BACKOFF_MIN: "1s",
    NOTIFICATION_DELIVERY_BACKOFF_MAX: "60s",
  }).delivery.backoff;

  test("attempt 3 lies in [2s, 6s]", () => {
    expect(backoffMs(policy, 3, () => 0)).toBe(2_000);
    expect(backoffMs(policy, 3, () => 0.999999)).toBeLessThanOrEqual(6_000);
    for (let i = 0; i < 200; i++) {
      const ms = backoffMs(policy, 3);
      expect(ms).toBeGreaterThanOrEqual(2_000);
      expect(ms).toBeLessThanOrEqual(6_000);
    }
  });

  test("attempt 7 is capped at 60s, so it lies in [30s, 90s]", () => {
    for (let i = 0; i < 200; i++) {
      const ms = backoffMs(policy, 7);
      expect(ms).toBeGreaterThanOrEqual(30_000);
      expect(ms).toBeLessThanOrEqual(90_000);
    }
  });

  test("attempt 1 respects the 1s floor", () => {
    expect(backoffMs(policy, 1, () => 0)).toBe(1_000);
  });
});

describe("debug inbox rules", () => {
  test("no token configured: anyone may read", () => {
    expect(() => requireBearer(null, undefined)).not.toThrow();
  });

  test("the right bearer token passes, a wrong or missing one is 401 with WWW-Authenticate", () => {
    expect(() => requireBearer("Bearer s3cret", "s3cret")).not.toThrow();
    expect(() => requireBearer("bearer s3cret", "s3cret")).not.toThrow();
    for (const header of [null, "Bearer wrong", "Basic s3cret", "Bearer ", "s3cret"]) {
      try {
        requireBearer(header, "s3cret");
        throw new Error(`accepted ${header}`);
      } catch (error) {
        expect(error).toMatchObject({ status: 401, code: "UNAUTHORIZED", headers: { "www-authenticate": "Bearer" } });
      }
    }
  });

  test("user ids must be non-blank and at most 128 characters", () => {
    expect(validUserId("u".repeat(128))).toBe("u".repeat(128));
    expect(() => validUserId(" ")).toThrow();
    expect(() => validUserId("u".repeat(129))).toThrow();
  });
});

test("the webhook body is snake_case with the payload nested", () => {
  const d = delivery("u1");
  expect(JSON.parse(webhookBody(d))).toEqual({
    notification_id: d.notificationId,
    event_id: d.eventId,
    user_id: "u1",
    type: "EntitlementGranted",
    occurred_at: "2026-01-17T00:00:00.000Z",
    payload: { trace_id: "t" },
  });
});
