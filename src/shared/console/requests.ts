// How the console answers one request of a signed-in person: the session guard (sign in, or 429), a page rendered in
// the frame, an action checked for its CSRF token and form token, and every failure as a page of its own.
import { ApiError } from "../http/errors.ts";
import { readCookie, sameSecret } from "./cookies.ts";
import { readForm, type Upload } from "./form.ts";
import { html } from "./html.ts";
import { type Frame, layout } from "./layout.ts";
import type { Action, ConsoleContext, ConsoleOptions, Page } from "./model.ts";
import { htmlResponse, redirect } from "./respond.ts";
import { createSessionStore, type Notice, randomToken, type Session } from "./session.ts";

/** Thrown by a page or an action the session's token may not do: a 403 page. */
export class ConsoleForbidden extends Error {}

/**
 * The one-time form token is not remembered server-side: it only names an idempotency key in the signed-in caller's
 * own key space, so a made-up one can do nothing that caller could not do with a fresh form.
 */
const FORM_TOKEN = /^[A-Za-z0-9_-]{22,64}$/;

/** An ordinary form: fields only. */
async function plainForm(request: Request): Promise<Upload | undefined> {
  const form = await readForm(request);
  return form && { form, files: new Map() };
}

export function createConsoleRequests<P>(options: ConsoleOptions<P>) {
  const sessions = createSessionStore<P>({ idleMs: options.idleMs, now: options.now ?? Date.now });
  const sessionCookie = `${options.service}_console_session`;
  const sessionOf = (request: Request) => sessions.touch(readCookie(request.headers.get("cookie"), sessionCookie));
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
    const session = sessionOf(request);
    if (!session) return redirect("/console/sign-in");
    const wait = options.limit(options.nameOf(session.principal));
    if (wait === undefined) return session;
    const response = message(429, "Slow down", `Too many requests; retry in ${wait} s.`, session);
    response.headers.set("retry-after", String(wait));
    return response;
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

  return {
    sessionCookie,
    frame,
    start: (principal: P) => sessions.create(principal, options.expiresAtOf?.(principal)),
    /** Sign-out: ends the request's session; false when the form's CSRF token is wrong. */
    end: async (request: Request): Promise<boolean> => {
      const session = sessionOf(request);
      if (!session) return true;
      if (!sameSecret((await readForm(request))?.get("csrf"), session.csrf)) return false;
      sessions.end(session.id);
      return true;
    },
    page: async (request: Request, render: Page<P>): Promise<Response> => {
      const session = guard(request);
      if (session instanceof Response) return session;
      const notice = session.notice;
      session.notice = undefined;
      try {
        const page = await render(contextOf(session, request));
        if (page instanceof Response) return page;
        const framed = { ...frame(session, notice), refreshSeconds: page.refreshSeconds };
        return htmlResponse(200, layout(framed, page.title, page.body));
      } catch (error) {
        return failure(error, session);
      }
    },
    /** `read` reads the form: an ordinary one unless the action takes an upload. */
    action: async (request: Request, path: string, act: Action<P>, read = plainForm): Promise<Response> => {
      const session = guard(request);
      if (session instanceof Response) return session;
      const upload = await read(request);
      // Nothing runs without a readable form; saying so beats blaming its CSRF token (an upload over the bound).
      if (!upload) return message(400, "Bad request", "The form is unreadable or too large.", session);
      const form = upload.form;
      if (!sameSecret(form.get("csrf"), session.csrf)) {
        const tokenName = options.nameOf(session.principal);
        options.log.warn({ path, token_name: tokenName }, "console form without a valid CSRF token");
        return message(403, "Forbidden", "The form's CSRF token is missing or wrong; reload the page.", session);
      }
      const formToken = form.get("form_token") ?? "";
      if (!FORM_TOKEN.test(formToken)) return message(400, "Bad request", "The form is incomplete.", session);
      try {
        const result = await act({ ...contextOf(session, request), form, formToken, files: upload.files });
        session.notice = result.notice;
        return redirect(result.redirect);
      } catch (error) {
        return failure(error, session);
      }
    },
  };
}
