// Signing in and out of a console. The sign-in form is protected like every other form: its CSRF token is a random
// value also set in a cookie of its own (double submit), since there is no session yet. The token typed in travels only
// in the POST body, is checked by the service's own token check, and is never stored, echoed or logged: the session
// keeps the principal it stands for.
import { Elysia } from "elysia";
import { ApiError, RETRY_AFTER_SECONDS } from "../http/errors.ts";
import { createRateLimiter } from "../http/rate-limit.ts";
import { createLogThrottle } from "../log-throttle.ts";
import type { Logger } from "../logger.ts";
import { cookie, isSecureRequest, readCookie, sameSecret } from "./cookies.ts";
import { readForm } from "./form.ts";
import { type Html, html } from "./html.ts";
import { type Frame, layout } from "./layout.ts";
import { ConsoleForbidden } from "./messages.ts";
import { htmlResponse, redirect } from "./respond.ts";
import { randomToken, type Session } from "./session.ts";

type SignInOptions<P> = {
  service: string;
  home: string;
  alwaysSecure: boolean;
  sessionCookie: string;
  frame: Frame;
  tokenLabel: string;
  signIn: (token: string) => P | undefined | Promise<P | undefined>;
  nameOf: (principal: P) => string;
  log: Logger;
  /** Opens a session for the principal, ending the one the request's browser held. */
  start: (principal: P, request: Request) => Session<P>;
  /** Ends the request's session; false when its form's CSRF token is wrong. */
  end: (request: Request) => boolean | Promise<boolean>;
};

/**
 * Wrong tokens one client may present at once, and how fast that allowance comes back. Only failures count, and each
 * client (its address) has its own allowance, so nobody's guesses can keep another person's right token out. A token
 * is checked even from a client over its allowance: a lockout would let anyone lock the operators out, and would
 * protect little (the API answers every guess at its own rate; Entitlement's tokens are 256-bit or signed, and
 * Notification's debug token is at least 16 characters: make it a random one).
 */
const FAILURES = { ratePerSecond: 0.5, burst: 10 };
/** Clients whose failures are remembered; beyond it the one seen the longest ago starts afresh. */
const MAX_CLIENTS = 10_000;
const HIDE = { detail: { hide: true } };

/**
 * Why a presented token opens no session: its status (401; 403 for a valid token the console refuses; 503 when the
 * token cannot be checked yet, which is no failure of the client's) and text.
 */
class Refused {
  constructor(
    readonly status: number,
    readonly problem: Html | string,
    readonly retryAfter?: string,
  ) {}
}

/** The principal of the form's token, or why it is refused. */
async function checkToken<P>(signIn: SignInOptions<P>["signIn"], token: string): Promise<P | Refused> {
  try {
    return (token === "" ? undefined : await signIn(token)) ?? new Refused(401, "That token is not accepted here.");
  } catch (error) {
    if (error instanceof ConsoleForbidden) return new Refused(403, error.reason);
    if (error instanceof ApiError && error.status === 503) {
      return new Refused(503, error.message, error.headers["retry-after"] ?? String(RETRY_AFTER_SECONDS));
    }
    throw error;
  }
}

/** The sign-in form with a fresh CSRF token (also set in its cookie), a problem above it when there is one. */
function signInPageOf(options: SignInOptions<unknown>, signInCookie: string) {
  return (request: Request, status: number, problem?: Html | string, retryAfter?: string) => {
    const csrf = randomToken();
    const body = html`<form method="post" action="/console/sign-in" data-testid="sign-in-form">
${problem ? html`<p class="notice error" data-testid="notice">${problem}</p>` : ""}
<input type="hidden" name="csrf" value="${csrf}">
<label>${options.tokenLabel} <input type="password" name="token" autocomplete="off" required autofocus></label>
<button type="submit">Sign in</button>
</form>`;
    const secure = isSecureRequest(request, options.alwaysSecure);
    const response = htmlResponse(status, layout(options.frame, "Sign in", body), [cookie(signInCookie, csrf, secure)]);
    if (retryAfter !== undefined) response.headers.set("retry-after", retryAfter);
    return response;
  };
}

export function signInRoutes<P>(options: SignInOptions<P>) {
  const signInCookie = `${options.service}_console_signin`;
  const failures = createRateLimiter(FAILURES, () => performance.now(), { maxKeys: MAX_CLIENTS });
  const quiet = createLogThrottle<"refused">();
  const secure = (request: Request) => isSecureRequest(request, options.alwaysSecure);
  const signInPage = signInPageOf(options as SignInOptions<unknown>, signInCookie);
  const refuse = (request: Request, client: string, refused: Refused) => {
    if (refused.status === 503) return signInPage(request, 503, refused.problem, refused.retryAfter);
    const logNow = quiet("refused");
    if (logNow) options.log.warn(logNow, "console sign-in refused");
    const wait = failures.take(client);
    if (wait === undefined) return signInPage(request, refused.status, refused.problem);
    return signInPage(request, 429, `Too many refused sign-ins; retry in ${wait} s.`, String(wait));
  };
  const attempt = async (request: Request, client: string) => {
    const form = await readForm(request);
    const expected = readCookie(request.headers.get("cookie"), signInCookie);
    if (expected === undefined || !sameSecret(form?.get("csrf"), expected)) {
      return signInPage(request, 403, "The form expired or did not come from this console; sign in again.");
    }
    const verdict = await checkToken(options.signIn, form?.get("token") ?? "");
    if (verdict instanceof Refused) return refuse(request, client, verdict);
    const session = options.start(verdict, request);
    options.log.info({ token_name: options.nameOf(verdict) }, "console sign-in");
    return redirect(options.home, [
      cookie(options.sessionCookie, session.id, secure(request)),
      cookie(signInCookie, undefined, secure(request)),
    ]);
  };

  return new Elysia({ name: `${options.service}-console-sign-in`, strictPath: true })
    .get("/console/sign-in", ({ request }) => signInPage(request, 200), HIDE)
    .post(
      "/console/sign-in",
      ({ request, server }) => attempt(request, server?.requestIP(request)?.address ?? "unknown"),
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
