// /console on Entitlement (ENTITLEMENT_CONSOLE_ENABLED): the shared console skeleton with this service's pages and
// actions. People sign in with an API token (static or, with an issuer configured, a JWT) that holds the read scope,
// checked by the same function as the API's bearer tokens (shared/auth/guard.ts); the session keeps the caller it
// stands for, whose scopes decide what the pages offer. A JWT is checked again on every request of its session (a
// remembered token costs a lookup), so a session ends when its token expires or its signing key is withdrawn.

import { type AuthSettings, bearerToken, type Caller, looksLikeJwt, verifyToken } from "../../shared/auth/guard.ts";
import { refusalError } from "../../shared/auth/refusal.ts";
import type { ConsoleSettings } from "../../shared/console/config.ts";
import { serviceConsole } from "../../shared/console/kit.ts";
import type { RateLimiter } from "../../shared/http/rate-limit.ts";
import type { RouteDeps } from "../features/commands/run.ts";
import { entitlementActions } from "./actions.ts";
import { auditPages } from "./audit.ts";
import { bulkActions, bulkPages, bulkUploads } from "./bulk.ts";
import { createBulkStore } from "./bulk-store.ts";
import { entitlementPages, requireScope } from "./pages.ts";
import { undoAction } from "./undo.ts";

/** The settings of Entitlement's console: the shared ones and how long a console change can be undone. */
export type EntitlementConsoleSettings = ConsoleSettings & { undoWindowMs?: number };

const DEFAULT_UNDO_WINDOW_MS = 24 * 3_600_000;

/**
 * A signed-in caller and, for a JWT, the token itself, kept in this process's memory (never in the browser) so that
 * each request of the session can verify it again.
 */
export type ConsoleCaller = Caller & { jwt?: string };

/**
 * The caller of a presented token, through the API's own checks; undefined when refused (told to onRefusal), and
 * the API's 503 when the token cannot be checked yet.
 */
async function callerOf(auth: AuthSettings, token: string): Promise<ConsoleCaller | undefined> {
  // The same length and shape rules as a bearer header, then a static token or a JWT.
  const checked = bearerToken(`Bearer ${token}`);
  if (checked === undefined) return undefined;
  const verdict = await verifyToken(auth, checked);
  if ("refused" in verdict) {
    auth.onRefusal?.(verdict);
    // The issuer's keys were never fetched: the token may be good, so 503 and Retry-After, as the API answers.
    if (verdict.refused === "keys_unavailable") throw refusalError(verdict);
    return undefined;
  }
  return auth.jwt && looksLikeJwt(checked) ? { ...verdict, jwt: checked } : verdict;
}

export function entitlementConsole(
  deps: RouteDeps,
  options: {
    settings: EntitlementConsoleSettings;
    auth: AuthSettings;
    limiter: RateLimiter | undefined;
    now?: () => number;
  },
) {
  const undoWindowMs = options.settings.undoWindowMs ?? DEFAULT_UNDO_WINDOW_MS;
  const bulk = createBulkStore(options.now);
  return serviceConsole<ConsoleCaller>(
    {
      service: "entitlement",
      title: "Entitlement",
      nav: [
        { href: "/console/users", label: "Users" },
        { href: "/console/audit", label: "Audit log" },
        { href: "/console/bulk", label: "Bulk changes" },
        { href: "/console/outbox", label: "Outbox" },
      ],
      settings: options.settings,
      now: options.now,
      tokenLabel: "API token",
      signIn: async (token) => {
        const caller = await callerOf(options.auth, token);
        // Every page needs the read scope: a token without it would only hold a session (one of the bounded number).
        if (caller) requireScope(caller, "read");
        return caller;
      },
      nameOf: (caller) => caller.name,
      // A session opened with a JWT ends when the token does, as the token's API calls would.
      expiresAtOf: (caller) => caller.expiresAtMs,
      recheck: async (caller) => {
        if (caller.jwt === undefined) return true;
        const verdict = await verifyToken(options.auth, caller.jwt);
        return !("refused" in verdict);
      },
      // The API's limiter: a token's console requests and its API calls share one budget.
      limit: (name) => options.limiter?.take(name),
      log: deps.log,
    },
    {
      pages: { ...entitlementPages(deps, undoWindowMs), ...auditPages(deps), ...bulkPages(bulk) },
      actions: {
        ...entitlementActions(deps),
        "/console/actions/undo": undoAction(deps, undoWindowMs),
        ...bulkActions(deps, bulk),
      },
      uploads: bulkUploads(deps, bulk),
    },
  );
}
