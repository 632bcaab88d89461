// The three Entitlement routes. Each declares the scope it needs (`scope: "write"`, see auth/scope.ts), which the edge
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
import {
  type Action,
  CommandBody,
  CommandHeaders,
  EntitlementResponse,
  EntitlementsResponse,
  renderCommandReply,
  UserParams,
} from "./model.ts";
import { type CommandDeps, executeCommand, listEntitlements } from "./service.ts";
import { checkIdempotencyKey, checkUserId, readCommandBody, traceIdOf } from "./validation.ts";

export type RouteDeps = CommandDeps & {
  log: Logger;
  /** The name of the caller the edge authenticated ('' when authentication is disabled). */
  callerOf: (request: Request) => string;
  gate: Gate;
};

const LIST_PATH = "/v1/users/:user_id/entitlements";

/** A lost or stuck database is worth a retry (503); anything else stays a 500. */
function unavailableOr(log: Logger, error: unknown): never {
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
          return readCommandBody(request);
        },
        "json" as const,
      ],
      body: CommandBody,
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
    );
}
