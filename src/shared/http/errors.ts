// The one error envelope, `{code, message}`, for every status (docs/api.md).
import { Type } from "@sinclair/typebox";
import { isTransientDbError } from "../db.ts";

const errorProperties = {
  code: Type.String({ description: "Stable, machine-readable; branch on this.", examples: ["BAD_REQUEST"] }),
  message: Type.String({ description: "For people; its wording may change." }),
};

/** What each code's `message` reads like, for the examples of the OpenAPI document. */
const EXAMPLE_MESSAGES: Record<string, string> = {
  BAD_REQUEST: "user_id must not be blank",
  UNAUTHORIZED: "a valid bearer token is required",
  FORBIDDEN: "this token does not have the write scope",
  NOT_FOUND: "no such resource",
  METHOD_NOT_ALLOWED: "method DELETE is not allowed here",
  PAYLOAD_TOO_LARGE: "request body must be at most 16384 bytes",
  UNSUPPORTED_MEDIA_TYPE: "Content-Type must be application/json",
  RATE_LIMITED: "rate limit exceeded, retry later",
  INTERNAL_ERROR: "internal error",
  NOT_READY: "database unavailable, retry later",
};

/** `CODE: when; OTHER_CODE: when` → the codes, in order. */
const CODE = /(?:^|; )([A-Z][A-Z_]*[A-Z]):/g;

const pascal = (code: string) =>
  code
    .toLowerCase()
    .split("_")
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join("");

/**
 * The error envelope as one response of a route. The description says which codes it carries and when, as
 * `CODE: when; OTHER_CODE: when`: the OpenAPI document (docs/openapi.json) shows it as that response's meaning, lists
 * exactly those codes as the `code` enum with an example, and names the schema after them (`NotFoundError`), so a
 * generated client gets one type per set of codes.
 */
export const errorSchema = (description: string) => {
  const codes = [...description.matchAll(CODE)].map((m) => m[1] as string);
  const [first] = codes;
  if (first === undefined) throw new Error(`an error response names its codes: "${description}"`);
  const meaning = (code: string) => description.split(`${code}: `)[1]?.split(";")[0]?.trim() ?? code;
  return Type.Object(
    {
      code:
        codes.length === 1
          ? Type.Literal(first, { description: errorProperties.code.description })
          : Type.Union(
              codes.map((c) => Type.Literal(c)),
              { description: errorProperties.code.description },
            ),
      message: errorProperties.message,
    },
    {
      title: `${codes.map(pascal).join("Or")}Error`.replace(/ErrorError$/, "Error"),
      description,
      examples: [{ code: first, message: EXAMPLE_MESSAGES[first] ?? meaning(first) }],
    },
  );
};

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
/** One of the HTTP layer's codes, or a service's own domain code (upper snake case). */
export type AnyErrorCode = ErrorCode | (string & {});

/** An expected outcome that maps straight to an HTTP status and a stable code. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: AnyErrorCode,
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

export function errorResponse(
  status: number,
  code: AnyErrorCode,
  message: string,
  headers: Record<string, string> = {},
) {
  const retry: Record<string, string> =
    status === 503 && !("retry-after" in headers) ? { "retry-after": String(RETRY_AFTER_SECONDS) } : {};
  return jsonResponse(status, { code, message }, { ...retry, ...headers });
}

/** A database that cannot be reached, or a transaction to retry, is a 503 with Retry-After, never a 500. */
export function unavailableOr(error: unknown): never {
  if (isTransientDbError(error)) throw new ApiError(503, "NOT_READY", "database unavailable, retry later");
  throw error;
}
