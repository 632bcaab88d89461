// What a service supplies to the console skeleton (kit.ts) and what its pages and actions receive (requests.ts):
// types only, so that the skeleton and its request handling share them without importing each other.
import type { Logger } from "../logger.ts";
import type { Html } from "./html.ts";
import type { Frame } from "./layout.ts";
import type { Notice } from "./session.ts";

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
  /** What the sign-in form asks for: "API token". */
  tokenLabel: string;
  /**
   * The principal a presented token signs in as, or undefined; through the service's own token check. Throws
   * ConsoleForbidden for a valid token that may not use the console (one without the read scope).
   */
  signIn: (token: string) => P | undefined | Promise<P | undefined>;
  nameOf: (principal: P) => string;
  /** When the credential behind a principal stops being valid (a JWT's exp, epoch ms): its session ends then too. */
  expiresAtOf?: (principal: P) => number | undefined;
  /**
   * Whether the credential a session was opened with still holds, asked on every request of the session: a JWT whose
   * signing key the issuer withdrew ends its session at the next request, not at its exp.
   */
  recheck?: (principal: P) => boolean | Promise<boolean>;
  /** Seconds to wait when the signed-in token `name` is over its rate; undefined when allowed. */
  limit: (name: string) => number | undefined;
  log: Logger;
};

/** What a page or an action knows of its request. */
export type ConsoleContext<P> = {
  principal: P;
  /** The request's query, strictly decoded (shared/console/form.ts): never `url.searchParams`, which is lenient. */
  query: URLSearchParams;
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
