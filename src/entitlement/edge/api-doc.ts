// What the Entitlement OpenAPI document (/openapi.json, docs/openapi.json) says beyond its routes: the service, its
// authentication and the meaning of each error status. Routes take their error responses from here, so the codes a
// status may carry are written once.

import { errorSchema } from "../../shared/http/errors.ts";
import type { ApiDocumentation } from "../../shared/http/openapi.ts";

/** The error responses every authenticated route may give, by status. */
export const ERRORS = {
  400: errorSchema("BAD_REQUEST: a missing, blank, too long or malformed header, path parameter or field"),
  401: errorSchema(
    "UNAUTHORIZED: no bearer token, one the service does not know, or a JWT access token that fails a check " +
      '(`WWW-Authenticate: Bearer error="invalid_token"`)',
  ),
  403: errorSchema("FORBIDDEN: the token lacks the scope the route needs"),
  404: errorSchema("NOT_FOUND: no such resource"),
  429: errorSchema("RATE_LIMITED: over the caller's rate limit; retry after `Retry-After` seconds"),
  500: errorSchema("INTERNAL_ERROR: a fault of the service; nothing was committed"),
  503: errorSchema(
    "NOT_READY: the database is unavailable, the service is saturated, or a JWT issuer's keys were never fetched; " +
      "retry after `Retry-After` seconds",
  ),
};

const ETAG = {
  description: "The entitlement's version, quoted: send it back as If-None-Match.",
  schema: { type: "string" },
  example: '"3"',
};

export const ENTITLEMENT_API: ApiDocumentation = {
  description: [
    "The source of truth for which user owns which item (SKU). Grants and revokes are idempotent per",
    "`Idempotency-Key` and publish an `EntitlementEvent` to NATS JetStream. Every error, for every status, is",
    '`{"code", "message"}`; branch on `code`. The guide for integrators is docs/api.md in the repository.',
  ].join(" "),
  bearerSchemes: {
    bearer: [
      "An API token (`dist/entitlement token new NAME SCOPES`). Scopes: `write` for grants and revokes, `read` for",
      "reads, `/metrics` and `/openapi.json` (those two are open when ENTITLEMENT_METRICS_PUBLIC=true).",
      "When ENTITLEMENT_AUTH_JWT_ISSUER is set, also a JWT access token of that OpenID Connect issuer, whose",
      "`entitlements.write` / `entitlements.read` scopes (configurable) give `write` / `read`.",
    ].join(" "),
  },
  security: ["bearer"],
  metricsErrors: { 401: ERRORS[401], 403: ERRORS[403] },
  refinements: {
    // The header limits (limits/headers.ts) apply to every request, before anything else.
    everyOperation: { 431: errorSchema("BAD_REQUEST: the request's headers are over 8 KiB in total, or more than 64") },
    operations: {
      // The check route answers the conditional GET itself (entitlements/routes.ts); its schemas cannot say so.
      checkEntitlement: {
        parameters: [
          {
            name: "If-None-Match",
            in: "header",
            required: false,
            description: "The ETag of the copy you hold: an unchanged entitlement answers 304 with no body.",
            schema: { type: "string" },
            example: '"3"',
          },
        ],
        responses: {
          200: { headers: { ETag: ETAG } },
          304: {
            description: "Not Modified: the entitlement is still at the version of If-None-Match.",
            headers: { ETag: ETAG },
          },
        },
      },
    },
  },
  tags: [
    { name: "entitlements", description: "Grant, revoke and list a user's entitlements." },
    { name: "points", description: "Reserve points for a user at a time; read a reservation, a balance, a ledger." },
    { name: "operations", description: "Probes and metrics for the platform that runs the service." },
  ],
};

/** Plus the errors of a command that takes a JSON body and an Idempotency-Key. */
export const COMMAND_ERRORS = {
  ...ERRORS,
  409: errorSchema(
    "IDEMPOTENCY_KEY_CONFLICT: the key was used for a different request; " +
      "ENTITLEMENT_STATE_CONFLICT: the entitlement is already in the requested state",
  ),
  413: errorSchema("PAYLOAD_TOO_LARGE: the body is over 16 KiB"),
  415: errorSchema("UNSUPPORTED_MEDIA_TYPE: a body that is not application/json"),
};

/** The points routes' errors: those of every route. */
export const POINTS_ERRORS = ERRORS;

/** Plus the errors of a points command (a reservation or a cancel). */
export const POINTS_COMMAND_ERRORS = {
  ...ERRORS,
  409: errorSchema(
    "IDEMPOTENCY_KEY_CONFLICT: the key was used for a different request; " +
      "RESERVATION_STATE_CONFLICT: the reservation is no longer PENDING, so it cannot be cancelled; " +
      "POINTS_BALANCE_LIMIT: the reservation would take the user's balance past 9007199254740991 (2^53 − 1)",
  ),
  413: COMMAND_ERRORS[413],
  415: COMMAND_ERRORS[415],
};
