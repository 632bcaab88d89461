// Browsers on another origin (NOTIFICATION_PLAYER_CORS_ORIGINS): the players' routes (/v1/me/) answer a listed
// origin's preflight and let its pages read their answers, errors included; any other origin gets no CORS header, so
// its browser refuses the answer. Only exact origins are listed, never a wildcard: the routes carry a player's token.
import type { Elysia } from "elysia";
import { errorResponse } from "../../shared/http/errors.ts";
import { requestPath } from "../../shared/http/path.ts";

const PLAYER_PREFIX = "/v1/me/";
export const CORS_METHODS = "GET, POST, PUT, DELETE";
export const CORS_HEADERS = "Authorization, Content-Type, Last-Event-ID";
/** How long a browser may keep a preflight's answer: ten minutes, Chromium's own upper bound is two hours. */
export const CORS_MAX_AGE_SECONDS = 600;

// biome-ignore lint/suspicious/noExplicitAny: the app's own type carries every route; only its hooks are used here
export function allowPlayerOrigins<A extends Elysia<any, any, any, any, any, any, any>>(
  app: A,
  origins: readonly string[],
) {
  if (origins.length === 0) return app;
  const listed = new Set(origins);
  return app.onRequest(({ request, set }) => {
    const origin = request.headers.get("origin");
    if (origin === null || !requestPath(request).startsWith(PLAYER_PREFIX)) return;
    const allowed = listed.has(origin);
    if (request.method === "OPTIONS" && request.headers.has("access-control-request-method")) {
      if (!allowed) return errorResponse(403, "FORBIDDEN", "this origin may not call the player routes");
      return new Response(null, { status: 204, headers: preflightHeaders(origin) });
    }
    set.headers.vary = "Origin";
    if (allowed) set.headers["access-control-allow-origin"] = origin;
  });
}

function preflightHeaders(origin: string): Record<string, string> {
  return {
    "access-control-allow-origin": origin,
    "access-control-allow-methods": CORS_METHODS,
    "access-control-allow-headers": CORS_HEADERS,
    "access-control-max-age": String(CORS_MAX_AGE_SECONDS),
    vary: "Origin",
  };
}
