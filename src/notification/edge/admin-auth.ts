// The admin API's edge in Notification's app: only the routes that declare a scope (shared/auth/scope.ts) ask for a
// token; every other path (probes, metrics, the debug inbox with its own token, the console) is as it was. The
// request's path is read by one call, the router's own reading (shared/http/path.ts), and the route that then runs
// must be the one the edge authorised (shared/auth/guard.ts createRouteCheck, as on Entitlement's edge).
import type { Elysia } from "elysia";
import { type AuthSettings, authenticate, type Caller, createRouteCheck } from "../../shared/auth/guard.ts";
import { scopeOf } from "../../shared/auth/scope.ts";
import { ApiError } from "../../shared/http/errors.ts";
import { requestPath } from "../../shared/http/path.ts";
import type { Logger } from "../../shared/logger.ts";

/** The admin API's bodies are a few hundred bytes; a declared length beyond this is refused before it is read. */
const MAX_ADMIN_BODY_BYTES = 16 * 1024;

type Routes = { routes: readonly { method: string; path: string }[] };

export type AdminEdgeOptions = {
  /** A larger body limit for these routes (by declared path): the send API's 1,000 recipients. */
  bodyLimits?: Readonly<Record<string, number>>;
  /** Filled with each admitted request's caller, for the routes that need its name (idempotency keys are per caller). */
  callers?: WeakMap<Request, Caller>;
};

// biome-ignore lint/suspicious/noExplicitAny: the app's own type carries every route; only its hooks are used here
export function guardAdminRoutes<A extends Elysia<any, any, any, any, any, any, any>>(
  app: A & Routes,
  settings: AuthSettings,
  log: Logger,
  options: AdminEdgeOptions = {},
) {
  const routeCheck = createRouteCheck(() => app.routes, log, "scoped routes");
  return app
    .onRequest(async ({ request }) => {
      const scoped = scopeOf(routeCheck.scopes(), request.method, requestPath(request));
      if (!scoped) return;
      const caller = await authenticate(settings, scoped.scope, request.headers.get("authorization"));
      if (caller) options.callers?.set(request, caller);
      routeCheck.decide(request, { access: scoped.scope, route: scoped.route });
      const limit = (scoped.route && options.bodyLimits?.[scoped.route]) || MAX_ADMIN_BODY_BYTES;
      if (Number(request.headers.get("content-length") ?? 0) > limit) {
        throw new ApiError(413, "PAYLOAD_TOO_LARGE", `request body must be at most ${limit} bytes`);
      }
    })
    .onBeforeHandle({ as: "global" }, ({ request, route }) => routeCheck.check(request, route));
}
