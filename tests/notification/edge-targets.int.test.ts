// Notification reads a request target the way Entitlement does (one canonical path for routing, authorisation and path
// parameters): every route, console and debug inbox on, in the odd forms of its target that once made two readings
// disagree (no Host, an empty or one-letter Host, dot segments, prefixes), with and without the debug token.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { useTestDatabase } from "../support/infra.ts";
import { rawRequest } from "../support/raw-http.ts";
import { notificationApp } from "./app.helpers.ts";
import { seedNotification } from "./helpers.ts";

setDefaultTimeout(60_000);

const f = useTestDatabase("notif_edge_targets", { service: "notification" });
const TOKEN = "debug-token-for-the-edge-test-0123";
const VICTIM = "edge-victim";
let port = 0;
let stop: () => void;
let routes: { method: string; path: string }[];

beforeAll(async () => {
  await seedNotification(f.sql, { userId: VICTIM, createdAt: new Date("2026-01-17T00:00:00Z") });
  const app = notificationApp(f.sql, {
    debugApi: { enabled: true, token: TOKEN },
    console: { enabled: true, idleMs: 60_000, alwaysSecure: false },
  });
  routes = app.routes.filter((r) => r.method === "GET").map((r) => ({ method: r.method, path: r.path }));
  const server = app.listen({ hostname: "127.0.0.1", port: 0 });
  port = server.server?.port ?? 0;
  stop = () => void server.stop(true);
});
afterAll(() => stop());

function forms(path: string): [string, string | null, string][] {
  return [
    [path, null, "1.0"],
    [path, "", "1.1"],
    [path, "a", "1.1"],
    [`/console/a${path}`, null, "1.0"],
    [`/aaaaaaaaaa${path}`, "", "1.1"],
    [`/console/..${path}`, null, "1.0"],
    [`/${path}`, "localhost", "1.1"],
  ];
}

const get = (target: string, host: string | null, version: string, extra: string[]) =>
  rawRequest(
    port,
    `GET ${target} HTTP/${version}\r\n${[...(host === null ? [] : [`Host: ${host}`]), ...extra, "Connection: close"].join("\r\n")}\r\n\r\n`,
  );

describe("the route that runs is the route that was read", () => {
  test("no form of any route's target is a 5xx, and the inbox never answers without its token", async () => {
    expect(routes.length).toBeGreaterThan(5);
    for (const route of routes) {
      for (const [target, host, version] of forms(route.path.replace(/:[a-z_]+/g, VICTIM))) {
        const reply = await get(target, host, version, []);
        expect(reply.status, `${target} (Host ${JSON.stringify(host)}): ${reply.body.slice(0, 100)}`).toBeLessThan(500);
        if (reply.status === 200) expect(reply.body, `${target} answered without a token`).not.toContain(VICTIM);
      }
    }
  });

  test("with the token, the inbox's user is the last segment of the path that was routed", async () => {
    const auth = [`Authorization: Bearer ${TOKEN}`];
    for (const [target, host, version] of forms(`/debug/notification/inbox/routed-user`)) {
      const reply = await get(target, host, version, auth);
      if (reply.status !== 200) continue;
      expect(JSON.parse(reply.body).user_id, `${target}: never a user from another segment`).toBe("routed-user");
    }
    const plain = await get(`/debug/notification/inbox/${VICTIM}`, null, "1.0", auth);
    expect(plain.status).toBe(200);
    expect(JSON.parse(plain.body).notifications).toHaveLength(1);
  });
});
