// /console on Entitlement (ENTITLEMENT_CONSOLE_ENABLED): the shared console skeleton with this service's pages and
// actions. People sign in with an API token (static or, with an issuer configured, a JWT), checked by the same
// function as the API's bearer tokens (shared/auth/guard.ts); the session keeps the caller it stands for, whose scopes
// decide what the pages offer. A session signed in with a JWT ends when the token expires (shared/console/session.ts).

import { type AuthSettings, bearerToken, type Caller, verifyToken } from "../../shared/auth/guard.ts";
import type { ConsoleSettings } from "../../shared/console/config.ts";
import { consoleRoutes } from "../../shared/console/kit.ts";
import type { RateLimiter } from "../../shared/http/rate-limit.ts";
import type { RouteDeps } from "../edge/route-deps.ts";
import { entitlementActions } from "./actions.ts";
import { entitlementPages } from "./pages.ts";

export function entitlementConsole(
  deps: RouteDeps,
  options: { settings: ConsoleSettings; auth: AuthSettings; limiter: RateLimiter | undefined; now?: () => number },
) {
  return consoleRoutes<Caller>(
    {
      service: "entitlement",
      title: "Entitlement",
      home: "/console/users",
      nav: [
        { href: "/console/users", label: "Users" },
        { href: "/console/outbox", label: "Outbox" },
      ],
      idleMs: options.settings.idleMs,
      alwaysSecure: options.settings.alwaysSecure,
      now: options.now,
      signIn: async (token) => {
        // The API's own check: the same length and shape rules as a bearer header, then a static token or a JWT.
        const checked = bearerToken(`Bearer ${token}`);
        if (checked === undefined) return undefined;
        const verdict = await verifyToken(options.auth, checked);
        if (!("refused" in verdict)) return verdict;
        options.auth.onRefusal?.(verdict);
        return undefined;
      },
      nameOf: (caller) => caller.name,
      // A session opened with a JWT ends when the token does, as the token's API calls would.
      expiresAtOf: (caller) => caller.expiresAtMs,
      // The API's limiter: a token's console requests and its API calls share one budget.
      limit: (key) => options.limiter?.take(key),
      log: deps.log,
    },
    { pages: entitlementPages(deps), actions: entitlementActions(deps) },
  );
}
