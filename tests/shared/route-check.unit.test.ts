// The edges' last line of defence (createRouteCheck in shared/auth/guard.ts), which both services' edges use: the route
// Elysia matched runs only when the edge decided the request may reach it; any other is 404 with an error line naming
// the route. Through HTTP no request reaches this refusal any more (one canonical path), so it is checked here.
import { describe, expect, test } from "bun:test";
import { createRouteCheck, type EdgeDecision, type GuardedRoutes } from "../../src/shared/auth/guard.ts";
import { ApiError } from "../../src/shared/http/errors.ts";
import { createLogger } from "../../src/shared/logger.ts";

const ROUTES = [
  { method: "GET", path: "/v1/users/:user_id/entitlements", hooks: { detail: { "x-required-scope": "read" } } },
  { method: "POST", path: "/v1/entitlements/grants", hooks: { detail: { "x-required-scope": "write" } } },
  { method: "GET", path: "/healthz" },
  { method: "GET", path: "/console/users" },
];
const LIST = "/v1/users/:user_id/entitlements";
const GRANT = "/v1/entitlements/grants";

function routeCheck(guarded: GuardedRoutes) {
  const lines: string[] = [];
  const log = createLogger({ level: "info", service: "t", destination: { write: (l: string) => lines.push(l) } });
  return { check: createRouteCheck(() => ROUTES, log, guarded), lines };
}

/** The status the check answers for `matched` after `decision` (200: the route may run). */
function statusOf(check: ReturnType<typeof createRouteCheck>, decision: EdgeDecision | undefined, matched: string) {
  const request = new Request("http://localhost/x");
  if (decision) check.decide(request, decision);
  try {
    check.check(request, matched);
    return 200;
  } catch (error) {
    if (error instanceof ApiError) return error.status;
    throw error;
  }
}

describe("the route that runs is the route the edge decided on", () => {
  test("the scopes are the routes' own declarations", () => {
    const { check } = routeCheck("every route");
    expect(check.scopes().map((s) => [s.method, s.path, s.scope])).toEqual([
      ["GET", LIST, "read"],
      ["POST", GRANT, "write"],
    ]);
  });

  test("every route: only the decided route runs, and a refusal is logged with its route", () => {
    const { check, lines } = routeCheck("every route");
    expect(statusOf(check, { access: "read", route: LIST }, LIST)).toBe(200);
    expect(statusOf(check, { access: "read", route: LIST }, GRANT)).toBe(404);
    expect(statusOf(check, { access: "authenticated", route: undefined }, GRANT)).toBe(404);
    expect(statusOf(check, undefined, "/healthz"), "a request never decided on reaches nothing").toBe(404);
    expect(lines.map((l) => JSON.parse(l).route)).toEqual([GRANT, GRANT, "/healthz"]);
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      level: "error",
      msg: "a request reached a route the edge did not authorise",
    });
  });

  test("a decision for the routes under a prefix lets those run, and only those", () => {
    const { check } = routeCheck("every route");
    const consolePaths: EdgeDecision = { access: "open", route: undefined, under: "/console" };
    expect(statusOf(check, consolePaths, "/console/users")).toBe(200);
    expect(statusOf(check, consolePaths, LIST)).toBe(404);
    expect(statusOf(check, { access: "read", route: LIST }, "/console/users")).toBe(404);
  });

  test("scoped routes: a route that declares no scope is not held to a decision, one that does is", () => {
    const { check, lines } = routeCheck("scoped routes");
    expect(statusOf(check, undefined, "/healthz")).toBe(200);
    expect(statusOf(check, undefined, "/console/users")).toBe(200);
    expect(statusOf(check, undefined, GRANT)).toBe(404);
    expect(statusOf(check, { access: "read", route: LIST }, GRANT)).toBe(404);
    expect(statusOf(check, { access: "write", route: GRANT }, GRANT)).toBe(200);
    expect(lines).toHaveLength(2);
  });
});
