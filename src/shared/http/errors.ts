// The one error envelope, `{code, message}`, for every status (CONTRACT §3).
import { Type } from "@sinclair/typebox";

const errorProperties = {
  code: Type.String({ description: "Stable, machine-readable; branch on this.", examples: ["BAD_REQUEST"] }),
  message: Type.String({ description: "For people; its wording may change." }),
};

export const ErrorBody = Type.Object(errorProperties, {
  title: "Error",
  description: "Every error, for every status.",
});

/**
 * The error envelope as one response of a route, its description saying which codes it carries and when: the OpenAPI
 * document (docs/openapi.json) shows the description as that response's meaning.
 */
export const errorSchema = (description: string) => Type.Object(errorProperties, { title: "Error", description });

/**
 * The codes of the HTTP layer itself, which every service may answer with; a service's domain codes (its 409s) are its
 * own. docs/api.md documents each (a test checks).
 */
export const ERROR_CODES = [
  "BAD_REQUEST",
  "UNAUTHORIZED",
  "FORBIDDEN",
  "NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "PAYLOAD_TOO_LARGE",
  "UNSUPPORTED_MEDIA_TYPE",
  "RATE_LIMITED",
  "INTERNAL_ERROR",
  "NOT_READY",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** An expected outcome that maps straight to an HTTP status and a stable code. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const badRequest = (message: string) => new ApiError(400, "BAD_REQUEST", message);

const JSON_TYPE = { "content-type": "application/json" };

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...JSON_TYPE, ...headers } });
}

/**
 * Seconds a client should wait before it retries a 503. Every 503 says so: without it a well-behaved client retries at
 * once, which is the worst moment for a saturated or recovering service. One second is the readiness probe's cache
 * and the order of a database reconnect; a 429 carries its own, computed from the caller's bucket.
 */
export const RETRY_AFTER_SECONDS = 1;

export function errorResponse(status: number, code: ErrorCode, message: string, headers: Record<string, string> = {}) {
  const retry: Record<string, string> =
    status === 503 && !("retry-after" in headers) ? { "retry-after": String(RETRY_AFTER_SECONDS) } : {};
  return jsonResponse(status, { code, message }, { ...retry, ...headers });
}
