// The reply to every error of every route, in the one envelope `{code, message}`: an ApiError as it says, 404 or 405
// (with Allow) for a path no route or no method of it matches, 400 for a body or input Elysia refused (naming the field
// and the rule it broke), and 500 with nothing internal for anything else (logged with the request id).
import type { Logger } from "../logger.ts";
import { ApiError, type ErrorCode, errorResponse } from "./errors.ts";
import { routePattern } from "./route-pattern.ts";
import { type RefusedInput, validationMessage } from "./validation-message.ts";

export type FailedRequest = {
  /** Elysia's error code (NOT_FOUND, PARSE, VALIDATION, ...). */
  code: unknown;
  error: unknown;
  request: Request;
  path: string;
  requestId: string;
};

type Route = { method: string; path: string };

function statusCode(status: number): ErrorCode {
  switch (status) {
    case 400:
      return "BAD_REQUEST";
    case 404:
      return "NOT_FOUND";
    case 405:
      return "METHOD_NOT_ALLOWED";
    case 413:
      return "PAYLOAD_TOO_LARGE";
    case 415:
      return "UNSUPPORTED_MEDIA_TYPE";
    default:
      return "INTERNAL_ERROR";
  }
}

/** 405 with the methods the path has, or 404 when no route has the path. */
function notFound(routes: readonly Route[], { request, path }: FailedRequest, headers: Record<string, string>) {
  const allowed = routes
    .filter((r) => r.method !== request.method && routePattern(r.path).test(path))
    .map((r) => r.method);
  if (allowed.length === 0) return errorResponse(404, "NOT_FOUND", "no such resource", headers);
  return errorResponse(405, "METHOD_NOT_ALLOWED", `method ${request.method} is not allowed here`, {
    ...headers,
    allow: [...new Set(allowed)].join(", "),
  });
}

export function errorReply(failed: FailedRequest, routes: readonly Route[], log: Logger): Response {
  const { code, error, request, path, requestId } = failed;
  const headers = { "x-request-id": requestId };
  const apiError = error instanceof ApiError ? error : (error as { cause?: unknown })?.cause;
  if (apiError instanceof ApiError) {
    return errorResponse(apiError.status, apiError.code, apiError.message, {
      ...headers,
      ...apiError.headers,
    });
  }
  if (code === "NOT_FOUND") return notFound(routes, failed, headers);
  if (code === "PARSE") return errorResponse(400, "BAD_REQUEST", "request body is invalid", headers);
  if (code === "VALIDATION") {
    return errorResponse(400, "BAD_REQUEST", validationMessage(error as RefusedInput), headers);
  }
  const status =
    typeof (error as { status?: unknown })?.status === "number" ? (error as { status: number }).status : 500;
  if (status >= 500) {
    log.error({ err: error, path, method: request.method, request_id: requestId }, "request failed");
    return errorResponse(500, "INTERNAL_ERROR", "internal error", headers);
  }
  return errorResponse(status, statusCode(status), "request rejected", headers);
}
