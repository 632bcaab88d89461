// Signing in and out of a console. The sign-in form is protected like every other form: its CSRF token is a random
// value also set in a cookie of its own (double submit), since there is no session yet. The token typed in travels only
// in the POST body, is checked by the service's own token check, and is never stored, echoed or logged: the session
// keeps the principal it stands for.
import { Elysia } from "elysia";
import type { Logger } from "../logger.ts";
import { cookie, isSecureRequest, readCookie, sameSecret } from "./cookies.ts";
import { readForm } from "./form.ts";
import { html } from "./html.ts";
import { type Frame, layout } from "./layout.ts";
import { htmlResponse, redirect } from "./respond.ts";
import { randomToken, type Session } from "./session.ts";

type SignInOptions<P> = {
  service: string;
  home: string;
  alwaysSecure: boolean;
  sessionCookie: string;
  frame: Frame;
  signIn: (token: string) => P | undefined | Promise<P | undefined>;
  nameOf: (principal: P) => string;
  limit: (key: string) => number | undefined;
  log: Logger;
  start: (principal: P) => Session<P>;
  /** Ends the request's session; false when its form's CSRF token is wrong. */
  end: (request: Request) => boolean | Promise<boolean>;
};

/** Token names are [a-z0-9_-], so this key never meets a token's bucket. */
const SIGN_IN_KEY = "console sign-in";
const HIDE = { detail: { hide: true } };

export function signInRoutes<P>(options: SignInOptions<P>) {
  const signInCookie = `${options.service}_console_signin`;
  const secure = (request: Request) => isSecureRequest(request, options.alwaysSecure);
  const signInPage = (request: Request, status: number, problem?: string) => {
    const csrf = randomToken();
    const body = html`<form method="post" action="/console/sign-in" data-testid="sign-in-form">
${problem ? html`<p class="notice error" data-testid="notice">${problem}</p>` : ""}
<input type="hidden" name="csrf" value="${csrf}">
<label>API token <input type="password" name="token" autocomplete="off" required autofocus></label>
<button type="submit">Sign in</button>
</form>`;
    return htmlResponse(status, layout(options.frame, "Sign in", body), [cookie(signInCookie, csrf, secure(request))]);
  };

  return new Elysia({ name: `${options.service}-console-sign-in`, strictPath: true })
    .get("/console/sign-in", ({ request }) => signInPage(request, 200), HIDE)
    .post(
      "/console/sign-in",
      async ({ request }) => {
        const form = await readForm(request);
        const expected = readCookie(request.headers.get("cookie"), signInCookie);
        if (expected === undefined || !sameSecret(form?.get("csrf"), expected)) {
          return signInPage(request, 403, "The form expired or did not come from this console; sign in again.");
        }
        const wait = options.limit(SIGN_IN_KEY);
        if (wait !== undefined) return signInPage(request, 429, `Too many sign-in attempts; retry in ${wait} s.`);
        const token = form?.get("token") ?? "";
        const principal = token === "" ? undefined : await options.signIn(token);
        if (principal === undefined) {
          options.log.warn({ service: options.service }, "console sign-in refused");
          return signInPage(request, 401, "That token is not accepted here.");
        }
        const session = options.start(principal);
        options.log.info({ token_name: options.nameOf(principal) }, "console sign-in");
        return redirect(options.home, [
          cookie(options.sessionCookie, session.id, secure(request)),
          cookie(signInCookie, undefined, secure(request)),
        ]);
      },
      { ...HIDE, parse: "none" },
    )
    .post(
      "/console/sign-out",
      async ({ request }) => {
        if (!(await options.end(request)))
          return htmlResponse(403, layout(options.frame, "Forbidden", html`<p>The form's CSRF token is wrong.</p>`));
        return redirect("/console/sign-in", [cookie(options.sessionCookie, undefined, secure(request))]);
      },
      { ...HIDE, parse: "none" },
    );
}
