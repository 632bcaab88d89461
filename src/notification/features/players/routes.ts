// /v1/me/…: a player's own inbox and live stream, with the access token of their OpenID Connect provider. Mounted only
// when NOTIFICATION_PLAYER_JWT_ISSUER is set, so these paths are a plain 404 otherwise. The player is verified before
// anything else about the request is looked at (derive runs before validation), and every call takes their user_id
// from the token alone.
import { Elysia } from "elysia";
import type { Sql } from "../../../shared/db.ts";
import { errorSchema } from "../../../shared/http/errors.ts";
import type { Clock } from "../../../shared/runtime.ts";
import type { Player, PlayerAuthenticator } from "../../edge/player-auth.ts";
import { issueTicket, redeemTicket } from "../../edge/tickets.ts";
import type { StreamHub } from "./hub.ts";
import { inboxSummary, listInbox, markRead } from "./inbox.ts";
import {
  ListQuery,
  ListResponse,
  MAX_SEQ,
  ReadBody,
  ReadResponse,
  StreamQuery,
  SummaryResponse,
  TicketResponse,
} from "./model.ts";
import { resumePoint } from "./sse.ts";
import { checkReadBody } from "./validation.ts";

export type PlayerRouteDeps = {
  sql: Sql;
  now: Clock;
  authenticate: PlayerAuthenticator;
  hub: StreamHub;
  /** Origins whose pages may call these routes from a browser (edge/player-cors.ts); absent: none. */
  corsOrigins?: readonly string[];
};

const STREAM_PATH = "/v1/me/notifications/stream";
const UNAUTHORIZED = errorSchema("UNAUTHORIZED: no valid access token (WWW-Authenticate says why)");
const BAD_REQUEST = errorSchema("BAD_REQUEST: a parameter or the body is invalid");
const TAGS = { tags: ["players"], security: [{ playerToken: [] }] };

export function playerRoutes(deps: PlayerRouteDeps) {
  return new Elysia({ name: "player-routes", strictPath: true })
    .derive(async ({ request, path }): Promise<{ player: Player | undefined }> => {
      // A browser's EventSource brings a ticket instead of a header: the stream route redeems it.
      if (path === STREAM_PATH && new URL(request.url).searchParams.has("ticket")) return { player: undefined };
      return { player: await deps.authenticate(request.headers.get("authorization")) };
    })
    .get("/v1/me/notifications", ({ player, query }) => listInbox(deps.sql, userOf(player), query), LIST)
    .get("/v1/me/notifications/summary", ({ player }) => inboxSummary(deps.sql, userOf(player)), SUMMARY)
    .post("/v1/me/notifications/read", ({ player, body }) => markRead(deps.sql, userOf(player), body, deps.now()), READ)
    .post(
      "/v1/me/stream-tickets",
      async ({ player, set }) => {
        set.status = 201;
        return issueTicket(deps.sql, player as Player, deps.now());
      },
      TICKET,
    )
    .get(STREAM_PATH, streamHandler(deps), STREAM);
}

/** Set by derive on every route but a ticketed stream. */
const userOf = (player: Player | undefined) => (player as Player).userId;

const LIST = {
  query: ListQuery,
  response: { 200: ListResponse, 400: BAD_REQUEST, 401: UNAUTHORIZED },
  detail: { operationId: "listMyNotifications", summary: "My notifications, newest first, paged", ...TAGS },
};
const SUMMARY = {
  response: { 200: SummaryResponse, 401: UNAUTHORIZED },
  detail: { operationId: "myNotificationSummary", summary: "My unread count and latest seq", ...TAGS },
};
const READ = {
  parse: "json" as const,
  transform: ({ body }: { body: unknown }) => checkReadBody(body),
  body: ReadBody,
  response: { 200: ReadResponse, 400: BAD_REQUEST, 401: UNAUTHORIZED },
  detail: {
    operationId: "markMyNotificationsRead",
    summary: "Mark notifications read, by ids or up to a seq (idempotent; others' ids are ignored)",
    ...TAGS,
  },
};
const TICKET = {
  response: { 201: TicketResponse, 401: UNAUTHORIZED },
  detail: {
    operationId: "createStreamTicket",
    summary: "A single-use ticket for the stream, for a browser's EventSource (which cannot send headers)",
    ...TAGS,
  },
};
const STREAM = {
  query: StreamQuery,
  response: {
    400: BAD_REQUEST,
    401: UNAUTHORIZED,
    503: errorSchema("NOT_READY: this server holds NOTIFICATION_STREAM_MAX streams; Retry-After says when to retry"),
  },
  detail: {
    operationId: "streamMyNotifications",
    summary: "My notifications as they are stored (Server-Sent Events), resumable with Last-Event-ID",
    ...TAGS,
  },
};

/** The stream's 200 is not JSON: the document says what it is (shared/http/openapi-refine.ts). */
export const PLAYER_API_OPERATIONS = {
  streamMyNotifications: {
    responses: {
      200: {
        description:
          "Server-Sent Events: each notification is `id: <seq>`, `event: notification`, `data: <PlayerNotification " +
          "JSON>`; `event: reset` (data `{last_seq}`) first when retention removed some of what Last-Event-ID asked " +
          "for; a `: keep-alive` comment at least every NOTIFICATION_STREAM_HEARTBEAT. The stream ends at the token's exp; " +
          '`event: closed` (data `{"reason": "stream_limit"}`) ends it when the player opened one stream more than ' +
          "NOTIFICATION_STREAM_MAX_PER_USER: do not reconnect at once.",
        content: { "text/event-stream": { schema: { type: "string" } } },
      },
    },
    parameters: [
      {
        name: "Last-Event-ID",
        in: "header",
        required: false,
        description: `The seq of the last notification received (0 to ${MAX_SEQ}): the stream first sends every later one.`,
        schema: { type: "string", pattern: "^[0-9]+$" },
      },
    ],
  },
};

type StreamContext = {
  player: Player | undefined;
  query: { ticket?: string; last_event_id?: string };
  request: Request;
  server: { timeout: (request: Request, seconds: number) => void } | null;
};

function streamHandler(deps: PlayerRouteDeps) {
  return async ({ player, query, request, server }: StreamContext) => {
    const resumeAfter = resumePoint(request.headers.get("last-event-id"), query.last_event_id);
    const who = player ?? (await redeemTicket(deps.sql, query.ticket ?? "", deps.now()));
    // A stream is quiet between keep-alives for longer than the server's idle timeout allows other requests.
    server?.timeout(request, 0);
    return deps.hub.open({ userId: who.userId, resumeAfter, expiresAtMs: who.expiresAtMs });
  };
}
