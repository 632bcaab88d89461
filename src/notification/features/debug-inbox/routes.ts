// GET /debug/notification/inbox/{user_id}: mounted only when NOTIFICATION_DEBUG_API_ENABLED=true, so it is a plain
// 404 otherwise.
import { Elysia } from "elysia";
import type { Sql } from "../../../shared/db.ts";
import { errorSchema } from "../../../shared/http/errors.ts";
import { pathParam } from "../../../shared/http/path.ts";
import { requireBearer } from "../../edge/debug-token.ts";
import { InboxParams, InboxResponse } from "./model.ts";
import { readInbox, validUserId } from "./service.ts";

const INBOX_PATH = "/debug/notification/inbox/:user_id";

export function inboxRoutes(deps: { sql: Sql; token: string | undefined }) {
  return new Elysia({ name: "debug-inbox" }).get(INBOX_PATH, ({ params }) => readInbox(deps.sql, params.user_id), {
    // Before the params schema: Elysia's lenient decoding would turn a malformed escape into a validation error
    // without its reason, or into U+FFFD.
    transform: ({ params, request }) => {
      requireBearer(request.headers.get("authorization"), deps.token);
      params.user_id = validUserId(pathParam(request, INBOX_PATH, "user_id"));
    },
    params: InboxParams,
    response: {
      200: InboxResponse,
      400: errorSchema("BAD_REQUEST: a blank user id, one over 128 characters or with control characters"),
      401: errorSchema("UNAUTHORIZED: the bearer token is missing or not NOTIFICATION_DEBUG_API_TOKEN"),
      503: errorSchema("NOT_READY: the database is unavailable; retry after Retry-After seconds"),
    },
    detail: {
      operationId: "readInbox",
      summary: "A user's latest notifications, newest first (debugging only)",
      tags: ["debug"],
      security: [{ debugToken: [] }],
    },
  });
}
