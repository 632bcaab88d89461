// GET /debug/notification/inbox/{user_id}: mounted only when NOTIFICATION_DEBUG_API_ENABLED=true, so it is a plain
// 404 otherwise.
import { Elysia } from "elysia";
import type { Sql } from "../../shared/db.ts";
import { ErrorBody } from "../../shared/http/errors.ts";
import { InboxParams, InboxResponse } from "./model.ts";
import { readInbox, requireBearer, validUserId } from "./service.ts";

export function inboxRoutes(deps: { sql: Sql; token: string | undefined }) {
  return new Elysia({ name: "debug-inbox" }).get(
    "/debug/notification/inbox/:user_id",
    ({ params, request }) => {
      requireBearer(request.headers.get("authorization"), deps.token);
      return readInbox(deps.sql, validUserId(params.user_id));
    },
    {
      params: InboxParams,
      response: { 200: InboxResponse, 400: ErrorBody, 401: ErrorBody },
      detail: { summary: "A user's latest notifications, newest first (debugging only)" },
    },
  );
}
