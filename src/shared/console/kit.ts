// The console skeleton both services mount at /console: sign-in with one of the service's tokens, a server-side
// session in a cookie, a CSRF token on every form, rate limits, and pages and actions that a service supplies. A page
// is a GET that renders HTML for a signed-in session; an action is a POST whose form carries the session's CSRF token
// and a one-time form token (an action may derive its idempotency key from it, so a double submit is one change), and
// that answers with a redirect and a notice (post/redirect/get).
import { Elysia } from "elysia";
import { ApiError } from "../http/errors.ts";
import type { Logger } from "../logger.ts";
import { readCookie, sameSecret } from "./cookies.ts";
import { readForm } from "./form.ts";
import { type Html, html } from "./html.ts";
import { type Frame, layout } from "./layout.ts";
import { htmlResponse, redirect, stylesheetResponse } from "./respond.ts";
import { createSessionStore, type Notice, randomToken, type Session } from "./session.ts";
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
  signIn: (token: string) => P | undefined;
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

/** Thrown by a page or an action the session's token may not do: a 403 page. */
export class ConsoleForbidden extends Error {}

/**
 * The one-time form token is not remembered server-side: it only names an idempotency key in the signed-in caller's
 * own key space, so a made-up one can do nothing that caller could not do with a fresh form.
 */
const FORM_TOKEN = /^[A-Za-z0-9_-]{22,64}$/;
const HIDE = { detail: { hide: true } };

export function consoleRoutes<P>(
  options: ConsoleOptions<P>,
  routes: { pages: Record<string, Page<P>>; actions: Record<string, Action<P>> },
) {
  const now = options.now ?? Date.now;
  const sessions = createSessionStore<P>({ idleMs: options.idleMs, now });
  const sessionCookie = `${options.service}_console_session`;
  const frame = (session?: Session<P>, notice?: Notice): Frame => ({
    service: options.title,
    nav: options.nav,
    signedIn: session && { name: options.nameOf(session.principal), csrf: session.csrf },
    notice,
  });
  const message = (status: number, title: string, text: string, session?: Session<P>) =>
    htmlResponse(status, layout(frame(session), title, html`<p>${text}</p>`));

  /** The request's live session, or the response that replaces the page: sign in, or wait (429). */
  const guard = (request: Request): Session<P> | Response => {
    const session = sessions.touch(readCookie(request.headers.get("cookie"), sessionCookie));
    if (!session) return redirect("/console/sign-in");
    const wait = options.limit(options.nameOf(session.principal));
    if (wait !== undefined) {
      const response = message(429, "Slow down", `Too many requests; retry in ${wait} s.`, session);
      response.headers.set("retry-after", String(wait));
      return response;
    }
    return session;
  };
  const contextOf = (session: Session<P>, request: Request): ConsoleContext<P> => ({
    principal: session.principal,
    url: new URL(request.url),
    formFields: () =>
      html`<input type="hidden" name="csrf" value="${session.csrf}"><input type="hidden" name="form_token" value="${randomToken(24)}">`,
  });
  /** A page's or an action's failure as the page it becomes; surprises are logged (without the request's data). */
  const failure = (error: unknown, session: Session<P>): Response => {
    if (error instanceof ConsoleForbidden) return message(403, "Not allowed", error.message, session);
    if (error instanceof ApiError) return message(error.status, "Not possible", error.message, session);
    options.log.error({ err: error }, "console request failed");
    return message(500, "Something went wrong", "The request failed; see the service log.", session);
  };

  // Elysia registers a route on the instance itself; the loops below add the service's pages and actions to it.
  const app = new Elysia({ name: `${options.service}-console`, strictPath: true })
    .get("/console/style.css", () => stylesheetResponse(STYLESHEET), HIDE)
    .get("/console", () => redirect(options.home), HIDE)
    .use(
      signInRoutes({
        ...options,
        sessionCookie,
        frame: frame(),
        start: (principal) => sessions.create(principal),
        end: (request) => {
          const session = sessions.touch(readCookie(request.headers.get("cookie"), sessionCookie));
          if (!session) return true;
          return readForm(request).then((form) => {
            if (!sameSecret(form?.get("csrf"), session.csrf)) return false;
            sessions.end(session.id);
            return true;
          });
        },
      }),
    );
  for (const [path, render] of Object.entries(routes.pages)) {
    app.get(
      path,
      async ({ request }) => {
        const session = guard(request);
        if (session instanceof Response) return session;
        const notice = session.notice;
        session.notice = undefined;
        try {
          const page = await render(contextOf(session, request));
          return htmlResponse(200, layout(frame(session, notice), page.title, page.body));
        } catch (error) {
          return failure(error, session);
        }
      },
      HIDE,
    );
  }
  for (const [path, act] of Object.entries(routes.actions)) {
    app.post(
      path,
      async ({ request }) => {
        const session = guard(request);
        if (session instanceof Response) return session;
        const form = await readForm(request);
        if (!sameSecret(form?.get("csrf"), session.csrf)) {
          options.log.warn(
            { path, token_name: options.nameOf(session.principal) },
            "console form without a valid CSRF token",
          );
          return message(403, "Forbidden", "The form's CSRF token is missing or wrong; reload the page.", session);
        }
        const formToken = form?.get("form_token") ?? "";
        if (!form || !FORM_TOKEN.test(formToken))
          return message(400, "Bad request", "The form is incomplete.", session);
        try {
          const result = await act({ ...contextOf(session, request), form, formToken });
          session.notice = result.notice;
          return redirect(result.redirect);
        } catch (error) {
          return failure(error, session);
        }
      },
      { ...HIDE, parse: "none" },
    );
  }
  return app;
}
