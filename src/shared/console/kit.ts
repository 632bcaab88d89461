// The console skeleton both services mount at /console: sign-in with one of the service's tokens, a server-side
// session in a cookie (re-checked on every request), a CSRF token on every form, rate limits, and pages and actions
// that a service supplies. A page is a GET that renders HTML for a signed-in session; an action is a POST whose form
// carries the session's CSRF token and a one-time form token (an action may derive its idempotency key from it, so a
// double submit is one change), and that answers with a redirect and a notice (post/redirect/get). An upload is an
// action whose form is multipart (a file), read up to the bound its service sets; a page may instead answer with a
// file to download, or ask to be reloaded while a long task runs.
import { Elysia } from "elysia";
import type { ConsoleSettings } from "./config.ts";
import { readUpload } from "./form.ts";
import type { Action, ConsoleOptions, Page, UploadAction } from "./model.ts";
import { createConsoleRequests } from "./requests.ts";
import { redirect, stylesheetResponse } from "./respond.ts";
import { signInRoutes } from "./sign-in.ts";
import { STYLESHEET } from "./style.ts";

export type { Action, ActionContext, ConsoleContext, ConsoleOptions, Page, UploadAction } from "./model.ts";

export { ConsoleForbidden } from "./requests.ts";

const HIDE = { detail: { hide: true } };

type ConsoleRoutes<P> = {
  pages: Record<string, Page<P>>;
  actions: Record<string, Action<P>>;
  uploads?: Record<string, UploadAction<P>>;
};

/**
 * A service's /console: its settings (`<PREFIX>_CONSOLE_*`) give the idle timeout and the cookies' Secure flag, and
 * signing in leads to the first page of its navigation.
 */
export function serviceConsole<P>(
  options: Omit<ConsoleOptions<P>, "home" | "idleMs" | "alwaysSecure"> & { settings: ConsoleSettings },
  routes: ConsoleRoutes<P>,
) {
  const { settings, ...rest } = options;
  const home = options.nav[0]?.href ?? "/console";
  return consoleRoutes({ ...rest, home, idleMs: settings.idleMs, alwaysSecure: settings.alwaysSecure }, routes);
}

export function consoleRoutes<P>(options: ConsoleOptions<P>, routes: ConsoleRoutes<P>) {
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
  for (const [path, upload] of Object.entries(routes.uploads ?? {})) {
    const read = (request: Request) => readUpload(request, upload.maxBytes);
    app.post(path, ({ request }) => requests.action(request, path, upload.act, read), { ...HIDE, parse: "none" });
  }
  return app;
}
