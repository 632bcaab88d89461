// POST /v1/notifications: any game server with a `notify` token sends a notification to 1–1,000 players
// (docs/api.md "Sending notifications"). The edge (app.ts) has authenticated the caller and checked the scope before
// this runs; the Idempotency-Key is checked first of all input, then the body, field by field.

import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { scopeMacro } from "../../../shared/auth/scope.ts";
import { errorSchema, unavailableOr } from "../../../shared/http/errors.ts";
import { checkIdempotencyKey, IdempotencyKeyHeader } from "../../../shared/http/idempotency-key.ts";
import { traceparentOf } from "../../../shared/trace-context.ts";
import { SEND_PATH, SendBody, SendReply, type SendRequest } from "./model.ts";
import { type SendDeps, sendNotifications } from "./service.ts";
import { readSendBody } from "./validation.ts";

export type SendRouteDeps = SendDeps & {
  /** The name of the token the edge admitted the request with. */
  callerOf: (request: Request) => string;
};

const ERRORS = {
  400: errorSchema(
    "BAD_REQUEST: the Idempotency-Key or a field is missing or breaks its rule; the message names which",
  ),
  401: errorSchema("UNAUTHORIZED: no bearer token, or one that is not in NOTIFICATION_AUTH_TOKENS"),
  403: errorSchema("FORBIDDEN: the token lacks the notify scope"),
  409: errorSchema("IDEMPOTENCY_KEY_CONFLICT: this caller used the key for another request"),
  413: errorSchema("PAYLOAD_TOO_LARGE: the body is over 256 KiB"),
  415: errorSchema("UNSUPPORTED_MEDIA_TYPE: the body is not application/json"),
  503: errorSchema("NOT_READY: the database is unavailable, retry after Retry-After"),
};

export function sendRoutes(deps: SendRouteDeps) {
  // The parser checks the key and reads the body once; the handler takes both from here.
  const keys = new WeakMap<Request, string>();
  const read = async (request: Request): Promise<SendRequest> => {
    keys.set(request, checkIdempotencyKey(request.headers));
    return readSendBody(request, deps.now());
  };
  return new Elysia({ name: "send-routes", strictPath: true }).use(scopeMacro).post(
    SEND_PATH,
    async ({ body, request, set }) => {
      const reply = await sendNotifications(deps, {
        request: body as SendRequest,
        caller: deps.callerOf(request),
        idempotencyKey: keys.get(request) ?? checkIdempotencyKey(request.headers),
        traceparent: traceparentOf() ?? null,
      }).catch(unavailableOr);
      set.status = 202;
      return reply;
    },
    {
      scope: "notify",
      // The first parser always returns the checked request or throws; "json" after it never runs and is there so
      // that /openapi.json lists application/json as the request media type.
      parse: [({ request }) => read(request), "json" as const],
      body: SendBody,
      headers: Type.Object({ "idempotency-key": IdempotencyKeyHeader }),
      response: { 202: SendReply, ...ERRORS },
      detail: {
        operationId: "sendNotification",
        summary: "Send a notification to players",
        tags: ["notifications"],
        security: [{ adminToken: [] }],
      },
    },
  );
}
