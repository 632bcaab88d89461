// The Entitlement routes: commands, the list and the check of one entitlement. Each declares the scope it needs (`scope: "write"`, see auth/scope.ts), which the edge
// (app.ts) checks before anything else. Input is checked in the parse/transform hooks (validation.ts) so that every
// bad request gets its precise `{code, message}`; the schemas also feed /openapi.json. Database work runs through the
// gate (limits/gate.ts).
import { Elysia } from "elysia";
import { isTransientDbError, SqlState } from "../../shared/db.ts";
import { ApiError } from "../../shared/http/errors.ts";
import type { Logger } from "../../shared/logger.ts";
import { COMMAND_ERRORS, ERRORS } from "../api-doc.ts";
import { scopeMacro } from "../auth/scope.ts";
import type { Gate } from "../limits/gate.ts";
import { checkEntitlement, etagOf, noneMatchHits } from "./check.ts";
import {
  type Action,
  CommandBody,
  CommandHeaders,
  EntitlementDetail,
  EntitlementResponse,
  EntitlementsResponse,
  GrantBody,
  ItemParams,
  renderCommandReply,
  UserParams,
} from "./model.ts";
import { type CommandDeps, executeCommand, listEntitlements } from "./service.ts";
import { checkIdempotencyKey, checkSku, checkUserId, readCommandBody, traceIdOf } from "./validation.ts";

export type RouteDeps = CommandDeps & {
  log: Logger;
  /** The name of the caller the edge authenticated ('' when authentication is disabled). */
  callerOf: (request: Request) => string;
  gate: Gate;
};

const LIST_PATH = "/v1/users/:user_id/entitlements";
const ITEM_PATH = "/v1/users/:user_id/entitlements/:stock_keeping_unit";

/** A lost or stuck database is worth a retry (503); anything else stays a 500. */
export function unavailableOr(log: Logger, error: unknown): never {
  const code = (error as { code?: unknown })?.code;
  if (isTransientDbError(error) || code === SqlState.queryCanceled) {
    log.warn({ err: error }, "database unavailable");
    throw new ApiError(503, "NOT_READY", "database unavailable, retry later");
  }
  throw error;
}

export function entitlementRoutes(deps: RouteDeps) {
  // The Idempotency-Key is checked first of all input (CONTRACT §3.1), in the parser, which hands it on from here.
  const keys = new WeakMap<Request, string>();
  const command = (action: Action, operationId: string, summary: string) => ({
    handler: async ({ body, request }: { body: CommandBody; request: Request }) => {
      const command = {
        action,
        body,
        idempotencyKey: keys.get(request) ?? checkIdempotencyKey(request.headers),
        traceId: traceIdOf(request.headers),
        caller: deps.callerOf(request),
      };
      const reply = await deps.gate
        .run(() => executeCommand(deps, command))
        .catch((error) => unavailableOr(deps.log, error));
      return new Response(renderCommandReply(reply.status, reply.body), {
        status: reply.status,
        headers: { "content-type": "application/json" },
      });
    },
    hooks: {
      // The first parser always returns the checked body or throws; "json" after it never runs and is there so that
      // /openapi.json lists application/json as the request media type.
      parse: [
        async ({ request }: { request: Request }) => {
          keys.set(request, checkIdempotencyKey(request.headers));
          return readCommandBody(request, action === "GRANT" ? { now: deps.now() } : undefined);
        },
        "json" as const,
      ],
      body: action === "GRANT" ? GrantBody : CommandBody,
      headers: CommandHeaders,
      response: { 200: EntitlementResponse, ...COMMAND_ERRORS },
      detail: { operationId, summary, tags: ["entitlements"] },
    },
  });
  const grant = command("GRANT", "grantEntitlement", "Grant an entitlement (idempotent per Idempotency-Key)");
  const revoke = command("REVOKE", "revokeEntitlement", "Revoke an entitlement (idempotent per Idempotency-Key)");

  return new Elysia({ name: "entitlement-routes", strictPath: true })
    .use(scopeMacro)
    .post("/v1/entitlements/grants", grant.handler, { ...grant.hooks, scope: "write" })
    .post("/v1/entitlements/revokes", revoke.handler, { ...revoke.hooks, scope: "write" })
    .get(
      LIST_PATH,
      ({ params }) =>
        deps.gate
          .run(() => listEntitlements(deps.sql, params.user_id))
          .catch((error) => unavailableOr(deps.log, error)),
      {
        scope: "read",
        transform: ({ params, request }) => {
          params.user_id = checkUserId(request, LIST_PATH);
        },
        params: UserParams,
        response: { 200: EntitlementsResponse, ...ERRORS },
        detail: {
          operationId: "listEntitlements",
          summary: "List a user's entitlements, newest first",
          tags: ["entitlements"],
        },
      },
    )
    .get(
      ITEM_PATH,
      async ({ params, request }) => {
        const found = await deps.gate
          .run(() => checkEntitlement(deps.sql, { userId: params.user_id, sku: params.stock_keeping_unit }))
          .catch((error) => unavailableOr(deps.log, error));
        if (!found) throw new ApiError(404, "NOT_FOUND", "entitlement not found");
        const etag = etagOf(found.version);
        if (noneMatchHits(request.headers.get("if-none-match"), etag)) {
          return new Response(null, { status: 304, headers: { etag } });
        }
        return new Response(JSON.stringify(found), { headers: { "content-type": "application/json", etag } });
      },
      {
        scope: "read",
        transform: ({ params, request }) => {
          params.user_id = checkUserId(request, ITEM_PATH);
          params.stock_keeping_unit = checkSku(request, ITEM_PATH);
        },
        params: ItemParams,
        response: { 200: EntitlementDetail, ...ERRORS },
        detail: {
          operationId: "checkEntitlement",
          // A bodiless status has no schema to validate; it is documented here only.
          responses: { 304: { description: "Not Modified: If-None-Match names the current ETag; no body." } },
          summary: "Check one entitlement (ETag = version; If-None-Match → 304); never granted → 404",
          tags: ["entitlements"],
        },
      },
    );
}
