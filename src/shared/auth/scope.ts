// Authorization declared on the route. A route states the scope it needs in its options, `scope: "write"`, through
// the `scope` macro; that one line is all a new route needs. The edge (app.ts) finds the route a request is for,
// authenticates the caller and checks that scope once, in onRequest, before anything else about the request is read.
// The macro records the scope in the route's OpenAPI operation as `x-required-scope`, where the edge reads it back.
import { type DocumentDecoration, Elysia } from "elysia";
import { routePattern } from "../http/route-pattern.ts";
import type { Scope } from "./tokens.ts";

const SCOPE_KEY = "x-required-scope";

/** `.use(scopeMacro)` in a routes module, then `{ scope: "read" | "write" | "notify" }` on each of its routes. */
export const scopeMacro = new Elysia({ name: "route-scope" }).macro({
  scope: (scope: Scope) => {
    // An OpenAPI specification extension (`x-`), so /openapi.json shows what each operation needs.
    const detail: DocumentDecoration & Record<string, unknown> = { [SCOPE_KEY]: scope };
    return { detail };
  },
});

/** The declared scope of every route, for matching a request before Elysia has routed it. */
export type RouteScopes = readonly { method: string; path: string; pattern: RegExp; scope: Scope }[];

/** A route as Elysia lists it once mounted; its scope is in its OpenAPI detail. */
export type DeclaredRoute = { method: string; path: string; hooks?: { detail?: unknown } };

export function routeScopes(routes: readonly DeclaredRoute[]): RouteScopes {
  return routes.flatMap((route) => {
    const scope = (route.hooks?.detail as Record<string, unknown> | undefined)?.[SCOPE_KEY];
    return scope === "read" || scope === "write" || scope === "notify"
      ? [{ method: route.method, path: route.path, pattern: routePattern(route.path), scope }]
      : [];
  });
}

/** What the edge decided a request may reach: the scope it needs and the one route (its declared path) it is for. */
export type RouteScope = { scope: Scope; route: string | undefined };

/**
 * The scope a request needs and its route: the route's own, or, for a method the path does not have (a 405 to come,
 * no route runs), the scope of the path's first route, so that a caller without that scope learns nothing about the
 * path. Undefined: no route declares the path.
 */
export function scopeOf(scopes: RouteScopes, method: string, path: string): RouteScope | undefined {
  const onPath = scopes.filter((s) => s.pattern.test(path));
  // Elysia answers HEAD with the GET route of the path.
  const routed = method === "HEAD" ? "GET" : method;
  const own = onPath.find((s) => s.method === routed);
  if (own) return { scope: own.scope, route: own.path };
  return onPath[0] && { scope: onPath[0].scope, route: undefined };
}
