// The four points routes (docs/api.md), built like the entitlement routes: the two commands are each one
// commandRoute (edge/command-route.ts), the reads declare their scope (shared/auth/scope.ts) and check their input in
// the transform hook; database work runs through the gate; the schemas feed /openapi.json.
import { Elysia } from "elysia";
import { scopeMacro } from "../../../shared/auth/scope.ts";
import { ApiError } from "../../../shared/http/errors.ts";
import { POINTS_COMMAND_ERRORS, POINTS_ERRORS } from "../../edge/api-doc.ts";
import { commandRoute } from "../../edge/command-route.ts";
import { throughGate } from "../../edge/route-deps.ts";
import type { RouteDeps } from "../commands/run.ts";
import { checkUserPath, readJsonObject } from "../entitlements/validation.ts";
import {
  PageQuery,
  PointsResponse,
  ReservationBody,
  ReservationParams,
  ReservationResponse,
  renderReply,
} from "./model.ts";
import { cancelReservation, createReservation, getPoints, getReservation } from "./service.ts";
import { checkPage, checkReservationBody, checkReservationId } from "./validation.ts";

const RESERVATION_PATH = "/v1/points/reservations/:reservation_id";
const CANCEL_PATH = `${RESERVATION_PATH}/cancel`;
const POINTS_PATH = "/v1/users/:user_id/points";

const notFound = () => new ApiError(404, "NOT_FOUND", "no such reservation");

export function pointsRoutes(deps: RouteDeps) {
  return new Elysia({ name: "points-routes", strictPath: true })
    .use(scopeMacro)
    .use(reserveRoute(deps))
    .use(cancelRoute(deps))
    .get(
      RESERVATION_PATH,
      async ({ params }) => {
        const found = await throughGate(deps, () => getReservation(deps.sql, params.reservation_id));
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
    .get(
      POINTS_PATH,
      ({ params, query }) => {
        const page = checkPage(query);
        return throughGate(deps, () => getPoints(deps.sql, params.user_id, page));
      },
      {
        transform: checkUserPath(POINTS_PATH),
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

function reserveRoute(deps: RouteDeps) {
  return commandRoute(deps, {
    path: "/v1/points/reservations",
    operationId: "reservePoints",
    summary: "Reserve points for a user at a time (idempotent per Idempotency-Key)",
    tags: ["points"],
    read: async (request) => checkReservationBody(await readJsonObject(request), deps.now()),
    body: ReservationBody,
    response: ReservationResponse,
    status: 201,
    errors: POINTS_COMMAND_ERRORS,
    execute: (command) => createReservation(deps, command),
    render: renderReply,
  });
}

function cancelRoute(deps: RouteDeps) {
  return commandRoute(deps, {
    path: CANCEL_PATH,
    operationId: "cancelReservation",
    summary: "Cancel a PENDING point reservation (idempotent per Idempotency-Key)",
    tags: ["points"],
    read: (request) => ({ reservation_id: checkReservationId(request, CANCEL_PATH) }),
    params: ReservationParams,
    response: ReservationResponse,
    errors: { ...POINTS_ERRORS, 409: POINTS_COMMAND_ERRORS[409] },
    execute: ({ body, ...keyed }) => cancelReservation(deps, { ...keyed, reservationId: body.reservation_id }),
    render: renderReply,
  });
}
