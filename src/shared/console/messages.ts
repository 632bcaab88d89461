// The console's answers that are a message rather than a page: a refusal, a wait, a failure. Each is a page of the
// frame with its status; a 429 or a 503 always says when to come back (Retry-After), as the API's do.
import { isTransientDbError } from "../db.ts";
import { ApiError, RETRY_AFTER_SECONDS } from "../http/errors.ts";
import { createLogThrottle } from "../log-throttle.ts";
import type { Logger } from "../logger.ts";
import { type Html, html, text } from "./html.ts";
import { type Frame, layout } from "./layout.ts";
import { htmlResponse } from "./respond.ts";

/** Thrown by a page, an action or a sign-in the token may not do: a 403 page saying why (made with `sentence`). */
export class ConsoleForbidden extends Error {
  constructor(readonly reason: Html) {
    super("not allowed in the console");
    this.name = "ConsoleForbidden";
  }
}

/** A message page; `retryAfter` (seconds) is required in effect for 429 and 503, which default to one second. */
export function messagePage(
  frame: Frame,
  status: number,
  title: string,
  body: Html | string,
  retryAfter?: string,
): Response {
  const response = htmlResponse(status, layout(frame, title, html`<p>${body}</p>`));
  const wait = retryAfter ?? (status === 429 || status === 503 ? String(RETRY_AFTER_SECONDS) : undefined);
  if (wait !== undefined) response.headers.set("retry-after", wait);
  return response;
}

/**
 * A page's or an action's failure as the message it becomes. A database that cannot be reached is a 503 (logged once
 * per quiet spell, not once per page); any other surprise a 500, logged without the request's data.
 */
export function createFailurePages(log: Logger) {
  const quiet = createLogThrottle<string>();
  return (error: unknown, frame: Frame): Response => {
    if (error instanceof ConsoleForbidden) return messagePage(frame, 403, "Not allowed", error.reason);
    if (error instanceof ApiError) {
      return messagePage(frame, error.status, "Not possible", text(error.message), error.headers["retry-after"]);
    }
    if (isTransientDbError(error)) {
      const code = String((error as { code?: unknown }).code ?? "unknown");
      const logNow = quiet(code);
      if (logNow) log.warn({ code, ...logNow }, "console request found the database unavailable");
      return messagePage(frame, 503, "Try again", "The database is unavailable; retry in a moment.");
    }
    log.error({ err: error }, "console request failed");
    return messagePage(frame, 500, "Something went wrong", "The request failed; see the service log.");
  };
}
