import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { allBound, type ConsumerHealth } from "../../src/notification/intake/consumer/worker.ts";
import { unreachableDatabase, useTestDatabase } from "../support/infra.ts";
import { notificationApp } from "./app.helpers.ts";
import { seedNotification } from "./helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_inbox", { service: "notification" });

function app(debugApi: { enabled: boolean; token?: string }, consumer?: ConsumerHealth) {
  return notificationApp(f.sql, {
    consumerReady: consumer ? () => allBound(consumer, ["entitlement", "matchmaking"]) : undefined,
    debugApi: { enabled: debugApi.enabled, token: debugApi.token },
  });
}
const get = (a: ReturnType<typeof app>, path: string, headers: Record<string, string> = {}) =>
  a.handle(new Request(`http://localhost${path}`, { headers }));

describe("debug inbox", () => {
  test("off by default: 404 in the error envelope", async () => {
    const res = await get(app({ enabled: false }), "/debug/notification/inbox/u1");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(await res.json()).toEqual({ code: "NOT_FOUND", message: "no such resource" });
  });

  test("on: newest first, payload as an object, ISO timestamps, unknown user → []", async () => {
    const user = `inbox-user-${crypto.randomUUID()}`;
    const older = await seedNotification(f.sql, { userId: user, createdAt: new Date("2026-01-17T00:00:00.120Z") });
    const newer = await seedNotification(f.sql, { userId: user, createdAt: new Date("2026-01-18T00:00:00Z") });
    await f.sql`update notifications set status = 'SENT', sent_at = ${new Date("2026-01-18T00:00:01Z")}
      where notification_id = ${newer}`;
    const a = app({ enabled: true });
    const res = await get(a, `/debug/notification/inbox/${encodeURIComponent(user)}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { user_id: string; notifications: Record<string, unknown>[] };
    expect(body.user_id).toBe(user);
    expect(body.notifications.map((n) => n.notification_id)).toEqual([newer, older]);
    expect(body.notifications[0]).toMatchObject({
      status: "SENT",
      type: "EntitlementGranted",
      created_at: "2026-01-18T00:00:00.000Z",
      sent_at: "2026-01-18T00:00:01.000Z",
      payload: { user_id: user, event_type: "EntitlementGranted" },
    });
    expect(body.notifications[1]).toMatchObject({ status: "PENDING", sent_at: null });
    const empty = await get(a, "/debug/notification/inbox/nobody-here");
    expect(await empty.json()).toEqual({ user_id: "nobody-here", notifications: [] });
  });

  test("the last stored comes first, by seq, even when its created_at is earlier", async () => {
    const user = `stored-order-${crypto.randomUUID()}`;
    const first = await seedNotification(f.sql, { userId: user, createdAt: new Date("2026-01-18T00:00:00Z") });
    const second = await seedNotification(f.sql, { userId: user, createdAt: new Date("2026-01-17T00:00:00Z") });
    const res = await get(app({ enabled: true }), `/debug/notification/inbox/${encodeURIComponent(user)}`);
    const body = (await res.json()) as { notifications: { notification_id: string }[] };
    expect(body.notifications.map((n) => n.notification_id)).toEqual([second, first]);
  });

  test("lists at most the latest 100", async () => {
    const user = `busy-${crypto.randomUUID()}`;
    for (let i = 0; i < 105; i++)
      await seedNotification(f.sql, { userId: user, createdAt: new Date(1_700_000_000_000 + i) });
    const body = (await (await get(app({ enabled: true }), `/debug/notification/inbox/${user}`)).json()) as {
      notifications: unknown[];
    };
    expect(body.notifications.length).toBe(100);
  });

  test("a blank or too long user_id is 400", async () => {
    const a = app({ enabled: true });
    for (const id of ["%20%20", "u".repeat(129)]) {
      const res = await get(a, `/debug/notification/inbox/${id}`);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { code: string }).code).toBe("BAD_REQUEST");
    }
  });

  test("a control character or a malformed escape in user_id is 400, never a 500", async () => {
    const a = app({ enabled: true });
    for (const [id, message] of [
      ["%00", "user_id must not contain control characters"],
      ["a%0Ab", "user_id must not contain control characters"],
      ["a%1B[31m", "user_id must not contain control characters"],
      ["%ZZ", "user_id must be well-formed UTF-8 percent-encoding"],
      ["%FF", "user_id must be well-formed UTF-8 percent-encoding"],
    ]) {
      const res = await get(a, `/debug/notification/inbox/${id}`);
      expect(res.status, `${id}: bad input is the client's error`).toBe(400);
      expect(await res.json()).toEqual({ code: "BAD_REQUEST", message });
    }
  });

  test("a user id the API accepts (an ideographic or no-break space) is looked up, not refused", async () => {
    const a = app({ enabled: true });
    for (const userId of ["\u3000", "\u00a0x"]) {
      const id = await seedNotification(f.sql, { userId });
      const res = await get(a, `/debug/notification/inbox/${encodeURIComponent(userId)}`);
      expect(res.status, JSON.stringify(userId)).toBe(200);
      const body = (await res.json()) as { notifications: { notification_id: string }[] };
      expect(body.notifications.map((n) => n.notification_id)).toEqual([id]);
    }
  });

  test("during a database outage: 503 NOT_READY with Retry-After, not a 500", async () => {
    const down = unreachableDatabase("notification");
    const a = notificationApp(down, {
      debugApi: { enabled: true, token: undefined },
    });
    const res = await get(a, "/debug/notification/inbox/u1");
    expect([res.status, res.headers.get("retry-after")]).toEqual([503, "1"]);
    expect(await res.json()).toEqual({ code: "NOT_READY", message: "database unavailable, retry later" });
    await down.end();
  });

  test("with a token: 401 + WWW-Authenticate without it, 200 with it", async () => {
    const a = app({ enabled: true, token: "inbox-token" });
    const missing = await get(a, "/debug/notification/inbox/u1");
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe("Bearer");
    expect(((await missing.json()) as { code: string }).code).toBe("UNAUTHORIZED");
    expect((await get(a, "/debug/notification/inbox/u1", { authorization: "Bearer nope" })).status).toBe(401);
    expect((await get(a, "/debug/notification/inbox/u1", { authorization: "Bearer inbox-token" })).status).toBe(200);
  });

  test("other methods are 405", async () => {
    const res = await app({ enabled: true }).handle(
      new Request("http://localhost/debug/notification/inbox/u1", { method: "POST" }),
    );
    expect(res.status).toBe(405);
  });
});

describe("readiness", () => {
  test("needs every JetStream event consumer bound", async () => {
    const health: ConsumerHealth = { bound: {} };
    const a = app({ enabled: false }, health);
    const down = await get(a, "/readyz");
    expect(down.status).toBe(503);
    expect(((await down.json()) as { code: string }).code).toBe("NOT_READY");
    health.bound.entitlement = true;
    expect((await get(a, "/readyz")).status, "not ready while the matchmaking consumer is not bound").toBe(503);
    health.bound.matchmaking = true;
    expect((await get(a, "/readyz")).status).toBe(200);
  });

  test("metrics expose the notification series", async () => {
    const text = await (await get(app({ enabled: false }), "/metrics")).text();
    for (const name of [
      "notification_delivery_total",
      "notification_delivery_e2e_delay_seconds",
      "notification_backlog_current",
      "notification_dlq_total",
      "notification_events_total",
    ]) {
      expect(text).toContain(name);
    }
  });
});
