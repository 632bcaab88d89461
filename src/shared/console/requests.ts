// How the console answers one request of a signed-in person: the session guard (sign in, or 429), a page rendered in
// the frame, an action checked for its CSRF token and form token, and every failure as a page of its own.
import { readCookie, sameSecret } from "./cookies.ts";
import { readForm, readQuery } from "./form.ts";
import { html } from "./html.ts";
import { type Frame, layout } from "./layout.ts";
import { createFailurePages, messagePage } from "./messages.ts";
import type { Action, ConsoleContext, ConsoleOptions, Page } from "./model.ts";
import { htmlResponse, redirect } from "./respond.ts";
import { createSessionStore, type Notice, randomToken, type Session } from "./session.ts";

export { ConsoleForbidden } from "./messages.ts";

/**
 * The one-time form token is not remembered server-side: it only names an idempotency key in the signed-in caller's
 * own key space, so a made-up one can do nothing that caller could not do with a fresh form.
 */
const FORM_TOKEN = /^[A-Za-z0-9_-]{22,64}$/;

const formFieldsOf = (session: Session<unknown>) => () =>
  html`<input type="hidden" name="csrf" value="${session.csrf}"><input type="hidden" name="form_token" value="${randomToken(24)}">`;

/** What every request of a console needs: its sessions, its frame, the session guard and the failure pages. */
function createCore<P>(options: ConsoleOptions<P>) {
  const sessions = createSessionStore<P>({ idleMs: options.idleMs, now: options.now ?? Date.now });
  const sessionCookie = `${options.service}_console_session`;
  const cookieOf = (request: Request) => readCookie(request.headers.get("cookie"), sessionCookie);
  const frame = (session?: Session<P>, notice?: Notice): Frame => ({
    service: options.title,
    nav: options.nav,
    signedIn: session && { name: options.nameOf(session.principal), csrf: session.csrf },
    notice,
  });
  /** The request's live session, or the response that replaces the page: sign in, or wait (429). */
  const guard = async (request: Request): Promise<Session<P> | Response> => {
    const session = sessions.touch(cookieOf(request));
    if (!session) return redirect("/console/sign-in");
    if (options.recheck && !(await options.recheck(session.principal))) {
      sessions.end(session.id);
      const tokenName = options.nameOf(session.principal);
      options.log.info({ token_name: tokenName }, "console session ended: its token no longer verifies");
      return redirect("/console/sign-in");
    }
    const wait = options.limit(options.nameOf(session.principal));
    if (wait === undefined) return session;
    return messagePage(frame(session), 429, "Slow down", `Too many requests; retry in ${wait} s.`, String(wait));
  };
  const contextOf = (session: Session<P>, query: URLSearchParams): ConsoleContext<P> => ({
    principal: session.principal,
    query,
    formFields: formFieldsOf(session),
  });
  const badRequest = (session: Session<P>, what: string) => messagePage(frame(session), 400, "Bad request", what);
  return {
    options,
    sessions,
    sessionCookie,
    cookieOf,
    frame,
    guard,
    contextOf,
    badRequest,
    failure: createFailurePages(options.log),
  };
}

type Core<P> = ReturnType<typeof createCore<P>>;

async function answerPage<P>(core: Core<P>, request: Request, render: Page<P>): Promise<Response> {
  const session = await core.guard(request);
  if (session instanceof Response) return session;
  const query = readQuery(request);
  if (!query) return core.badRequest(session, "The address holds a malformed percent escape.");
  const notice = session.notice;
  session.notice = undefined;
  try {
    const page = await render(core.contextOf(session, query));
    return htmlResponse(200, layout(core.frame(session, notice), page.title, page.body));
  } catch (error) {
    return core.failure(error, core.frame(session));
  }
}

async function answerAction<P>(core: Core<P>, request: Request, path: string, act: Action<P>): Promise<Response> {
  const session = await core.guard(request);
  if (session instanceof Response) return session;
  const form = await readForm(request);
  if (!form) return core.badRequest(session, "The form could not be read (a malformed percent escape?).");
  if (!sameSecret(form.get("csrf"), session.csrf)) {
    const tokenName = core.options.nameOf(session.principal);
    core.options.log.warn({ path, token_name: tokenName }, "console form without a valid CSRF token");
    const text = "The form's CSRF token is missing or wrong; reload the page.";
    return messagePage(core.frame(session), 403, "Forbidden", text);
  }
  const formToken = form.get("form_token") ?? "";
  if (!FORM_TOKEN.test(formToken)) return core.badRequest(session, "The form is incomplete.");
  try {
    const result = await act({ ...core.contextOf(session, new URLSearchParams()), form, formToken });
    session.notice = result.notice;
    return redirect(result.redirect);
  } catch (error) {
    return core.failure(error, core.frame(session));
  }
}

export function createConsoleRequests<P>(options: ConsoleOptions<P>) {
  const core = createCore(options);
  const { sessions, cookieOf } = core;
  return {
    sessionCookie: core.sessionCookie,
    frame: core.frame,
    /** A sign-in: the browser's previous session (if any) ends, so one browser never holds two. */
    start: (principal: P, request: Request) => {
      const previous = cookieOf(request);
      if (previous !== undefined) sessions.end(previous);
      return sessions.create(principal, options.expiresAtOf?.(principal));
    },
    /** Sign-out: ends the request's session; false when the form's CSRF token is wrong. */
    end: async (request: Request): Promise<boolean> => {
      const session = sessions.touch(cookieOf(request));
      if (!session) return true;
      if (!sameSecret((await readForm(request))?.get("csrf"), session.csrf)) return false;
      sessions.end(session.id);
      return true;
    },
    page: (request: Request, render: Page<P>) => answerPage(core, request, render),
    action: (request: Request, path: string, act: Action<P>) => answerAction(core, request, path, act),
  };
}
