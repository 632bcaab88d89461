// The four points routes (CONTRACT §3.1a), built like the entitlement routes: each declares its scope (auth/scope.ts),
// input is checked in the parse/transform hooks, the database work runs through the gate; the schemas feed
// /openapi.json.
import { Elysia } from "elysia";
import { ApiError } from "../../shared/http/errors.ts";
import type { Logger } from "../../shared/logger.ts";
import { POINTS_COMMAND_ERRORS, POINTS_ERRORS } from "../api-doc.ts";
import { scopeMacro } from "../auth/scope.ts";
import { CommandHeaders } from "../entitlements/model.ts";
import { checkIdempotencyKey, checkUserId, readJsonObject, traceIdOf } from "../entitlements/validation.ts";
import type { Gate } from "../limits/gate.ts";
import { unavailableOr } from "../route-deps.ts";
import {
  PageQuery,
  PointsResponse,
  ReservationBody,
  ReservationParams,
  ReservationResponse,
  renderReply,
} from "./model.ts";
import {
  cancelReservation,
  createReservation,
  getPoints,
  getReservation,
  type PointsDeps,
  type Reply,
  ReservationNotFound,
} from "./service.ts";
import { checkPage, checkReservationBody, checkReservationId } from "./validation.ts";

export type PointsRouteDeps = PointsDeps & {
  log: Logger;
  /** Told when a request found the database unavailable (readiness reflects it). */
  onUnavailable?: (error: unknown) => void;
  /** The name of the caller the edge authenticated ('' when authentication is disabled). */
  callerOf: (request: Request) => string;
  gate: Gate;
};

const RESERVATION_PATH = "/v1/points/reservations/:reservation_id";
const CANCEL_PATH = `${RESERVATION_PATH}/cancel`;
const POINTS_PATH = "/v1/users/:user_id/points";

const notFound = () => new ApiError(404, "NOT_FOUND", "no such reservation");

function send(reply: Reply): Response {
  return new Response(renderReply(reply.status, reply.body), {
    status: reply.status,
    headers: { "content-type": "application/json" },
  });
}

export function pointsRoutes(deps: PointsRouteDeps) {
  const run = <T>(work: () => Promise<T>) =>
    deps.gate.run(work).catch((error) => {
      if (error instanceof ReservationNotFound) throw notFound();
      return unavailableOr(deps, error);
    });
  const keyed = (request: Request) => ({
    idempotencyKey: checkIdempotencyKey(request.headers),
    traceId: traceIdOf(request.headers),
    caller: deps.callerOf(request),
  });

  return new Elysia({ name: "points-routes", strictPath: true })
    .use(scopeMacro)
    .post(
      "/v1/points/reservations",
      async ({ body, request }) => send(await run(() => createReservation(deps, { ...keyed(request), body }))),
      {
        // The first parser returns the checked body or throws; "json" after it only tells OpenAPI the media type.
        parse: [
          async ({ request }) => {
            checkIdempotencyKey(request.headers);
            return checkReservationBody(await readJsonObject(request), deps.now());
          },
          "json" as const,
        ],
        scope: "write",
        body: ReservationBody,
        headers: CommandHeaders,
        response: { 201: ReservationResponse, ...POINTS_COMMAND_ERRORS },
        detail: {
          operationId: "reservePoints",
          summary: "Reserve points for a user at a time (idempotent per Idempotency-Key)",
          tags: ["points"],
        },
      },
    )
    .get(
      RESERVATION_PATH,
      async ({ params }) => {
        const found = await run(() => getReservation(deps.sql, params.reservation_id));
        if (!found) throw notFound();
        return found;
      },
      {
        transform: ({ params, request }) => {
          params.reservation_id = checkReservationId(request, RESERVATION_PATH);
        },
        scope: "read",
        params: ReservationParams,
        response: { 200: ReservationResponse, ...POINTS_ERRORS },
        detail: { operationId: "getReservation", summary: "Read a point reservation", tags: ["points"] },
      },
    )
    .post(
      CANCEL_PATH,
      async ({ params, request }) =>
        send(await run(() => cancelReservation(deps, { ...keyed(request), reservationId: params.reservation_id }))),
      {
        // A cancel has no body; whatever is sent is not read.
        parse: () => ({}),
        transform: ({ params, request }) => {
          checkIdempotencyKey(request.headers);
          params.reservation_id = checkReservationId(request, CANCEL_PATH);
        },
        scope: "write",
        params: ReservationParams,
        headers: CommandHeaders,
        response: { 200: ReservationResponse, ...POINTS_ERRORS, 409: POINTS_COMMAND_ERRORS[409] },
        detail: {
          operationId: "cancelReservation",
          summary: "Cancel a PENDING point reservation (idempotent per Idempotency-Key)",
          tags: ["points"],
        },
      },
    )
    .get(
      POINTS_PATH,
      ({ params, query }) => {
        const page = checkPage(query);
        return run(() => getPoints(deps.sql, params.user_id, page));
      },
      {
        transform: ({ params, request }) => {
          params.user_id = checkUserId(request, POINTS_PATH);
        },
        scope: "read",
        query: PageQuery,
        response: { 200: PointsResponse, ...POINTS_ERRORS },
        detail: {
          operationId: "getPoints",
          summary: "A user's point balance and transactions, newest first, paged",
          tags: ["points"],
        },
      },
    );
}
