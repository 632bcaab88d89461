// The console skeleton both services mount at /console: sign-in with one of the service's tokens, a server-side
// session in a cookie (re-checked on every request), a CSRF token on every form, rate limits, and pages and actions
// that a service supplies. A page is a GET that renders HTML for a signed-in session; an action is a POST whose form
// carries the session's CSRF token and a one-time form token (an action may derive its idempotency key from it, so a
// double submit is one change), and that answers with a redirect and a notice (post/redirect/get).
import { Elysia } from "elysia";
import type { Action, ConsoleOptions, Page } from "./model.ts";
import { createConsoleRequests } from "./requests.ts";
import { redirect, stylesheetResponse } from "./respond.ts";
import { signInRoutes } from "./sign-in.ts";
import { STYLESHEET } from "./style.ts";

export type { Action, ActionContext, ConsoleContext, ConsoleOptions, Page } from "./model.ts";

export { ConsoleForbidden } from "./requests.ts";

const HIDE = { detail: { hide: true } };

export function consoleRoutes<P>(
  options: ConsoleOptions<P>,
  routes: { pages: Record<string, Page<P>>; actions: Record<string, Action<P>> },
) {
  const requests = createConsoleRequests(options);
  // Elysia registers a route on the instance itself; the loops below add the service's pages and actions to it.
  const app = new Elysia({ name: `${options.service}-console`, strictPath: true })
    .get("/console/style.css", () => stylesheetResponse(STYLESHEET), HIDE)
    .get("/console", () => redirect(options.home), HIDE)
    .use(
      signInRoutes({
        ...options,
        sessionCookie: requests.sessionCookie,
        frame: requests.frame(),
        start: requests.start,
        end: requests.end,
      }),
    );
  for (const [path, render] of Object.entries(routes.pages)) {
    app.get(path, ({ request }) => requests.page(request, render), HIDE);
  }
  for (const [path, act] of Object.entries(routes.actions)) {
    app.post(path, ({ request }) => requests.action(request, path, act), { ...HIDE, parse: "none" });
  }
  return app;
}
