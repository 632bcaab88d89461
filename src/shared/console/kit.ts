// The console skeleton both services mount at /console: sign-in with one of the service's tokens, a server-side
// session in a cookie, a CSRF token on every form, rate limits, and pages and actions that a service supplies. A page
// is a GET that renders HTML for a signed-in session; an action is a POST whose form carries the session's CSRF token
// and a one-time form token (an action may derive its idempotency key from it, so a double submit is one change), and
// that answers with a redirect and a notice (post/redirect/get).
import { Elysia } from "elysia";
import type { Logger } from "../logger.ts";
import type { Html } from "./html.ts";
import type { Frame } from "./layout.ts";
import { createConsoleRequests } from "./requests.ts";
import { redirect, stylesheetResponse } from "./respond.ts";
import type { Notice } from "./session.ts";
import { signInRoutes } from "./sign-in.ts";
import { STYLESHEET } from "./style.ts";

export type ConsoleOptions<P> = {
  /** Cookie names and the log say which service it is: "entitlement" or "notification". */
  service: string;
  /** The page's heading, "Entitlement". */
  title: string;
  /** Where signing in leads. */
  home: string;
  nav: Frame["nav"];
  idleMs: number;
  /** Mark cookies Secure even on plain http (TLS ends at a proxy in front). */
  alwaysSecure: boolean;
  /** Milliseconds, for the idle timeout (default Date.now). */
  now?: () => number;
  /** The principal a presented token signs in as, or undefined; through the service's own token check. */
  signIn: (token: string) => P | undefined | Promise<P | undefined>;
  nameOf: (principal: P) => string;
  /** Seconds to wait when `key` (a token name, or "console sign-in") is over its rate; undefined when allowed. */
  limit: (key: string) => number | undefined;
  log: Logger;
};

/** What a page or an action knows of its request. */
export type ConsoleContext<P> = {
  principal: P;
  url: URL;
  /** The hidden inputs every form of the page carries: the CSRF token and a fresh one-time form token. */
  formFields: () => Html;
};

export type ActionContext<P> = ConsoleContext<P> & {
  form: URLSearchParams;
  /** The form's one-time token, checked for shape: the seed of an idempotency key. */
  formToken: string;
};

export type Page<P> = (context: ConsoleContext<P>) => Promise<{ title: string; body: Html }>;
export type Action<P> = (context: ActionContext<P>) => Promise<{ redirect: string; notice: Notice }>;

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
