// The Entitlement routes: grant and revoke (each a commandRoute, command-route.ts), the list and the check of one
// entitlement. Each declares the scope it needs (`scope: "read"`, see shared/auth/scope.ts), which the edge (app.ts) checks
// before anything else. Input is checked in the parse/transform hooks (validation.ts) so that every bad request gets
// its precise `{code, message}`; the schemas also feed /openapi.json. Database work runs through the gate.
import { Elysia } from "elysia";
import { scopeMacro } from "../../../shared/auth/scope.ts";
import { ApiError } from "../../../shared/http/errors.ts";
import { parseLimit } from "../../../shared/http/paging.ts";
import { ERRORS } from "../../edge/api-doc.ts";
import { commandRoute } from "../../edge/command-route.ts";
import { throughGate } from "../../edge/route-deps.ts";
import type { RouteDeps } from "../commands/run.ts";
import { checkEntitlement, etagOf, noneMatchHits } from "./check.ts";
import {
  type Action,
  CommandBody,
  type CommandReplyBody,
  EntitlementDetail,
  EntitlementResponse,
  EntitlementsResponse,
  GrantBody,
  ItemParams,
  ListQuery,
  renderCommandReply,
  UserParams,
} from "./model.ts";
import { executeCommand, listEntitlements, readListCursor } from "./service.ts";
import { checkUserPath, readCommandBody } from "./validation.ts";

const LIST_PATH = "/v1/users/:user_id/entitlements";
const ITEM_PATH = "/v1/users/:user_id/entitlements/:stock_keeping_unit";
const GRANT_SUMMARY = "Grant an entitlement (idempotent per Idempotency-Key)";
const REVOKE_SUMMARY = "Revoke an entitlement (idempotent per Idempotency-Key)";

export function entitlementRoutes(deps: RouteDeps) {
  return new Elysia({ name: "entitlement-routes", strictPath: true })
    .use(scopeMacro)
    .use(changeRoute(deps, "GRANT", "/v1/entitlements/grants", "grantEntitlement", GRANT_SUMMARY))
    .use(changeRoute(deps, "REVOKE", "/v1/entitlements/revokes", "revokeEntitlement", REVOKE_SUMMARY))
    .get(
      LIST_PATH,
      ({ params, query }) => {
        const input = { userId: params.user_id, limit: parseLimit(query.limit), after: readListCursor(query.cursor) };
        return throughGate(deps, () => listEntitlements(deps.sql, input));
      },
      {
        scope: "read",
        transform: checkUserPath(LIST_PATH),
        params: UserParams,
        query: ListQuery,
        response: { 200: EntitlementsResponse, ...ERRORS },
        detail: {
          operationId: "listEntitlements",
          summary: "A user's entitlements, newest first, paged",
          tags: ["entitlements"],
        },
      },
    )
    .get(ITEM_PATH, ({ params, request }) => checkOne(deps, params, request.headers.get("if-none-match")), {
      scope: "read",
      transform: checkUserPath(ITEM_PATH),
      params: ItemParams,
      response: { 200: EntitlementDetail, ...ERRORS },
      detail: {
        operationId: "checkEntitlement",
        // A bodiless status has no schema to validate; it is documented here only.
        responses: { 304: { description: "Not Modified: If-None-Match names the current ETag; no body." } },
        summary: "Check one entitlement (ETag = version; If-None-Match → 304); never granted → 404",
        tags: ["entitlements"],
      },
    });
}

function changeRoute(deps: RouteDeps, action: Action, path: string, operationId: string, summary: string) {
  return commandRoute<CommandBody>(deps, {
    path,
    operationId,
    summary,
    read: (request) => readCommandBody(request, action === "GRANT" ? { now: deps.now() } : undefined),
    body: action === "GRANT" ? GrantBody : CommandBody,
    response: EntitlementResponse,
    execute: (input) => executeCommand(deps, { action, ...input }),
    render: (status, body) => renderCommandReply(status, body as CommandReplyBody),
  });
}

/** One entitlement with its version as the strong ETag; 304 when If-None-Match names it. */
async function checkOne(
  deps: RouteDeps,
  params: { user_id: string; stock_keeping_unit: string },
  ifNoneMatch: string | null,
): Promise<Response> {
  const found = await throughGate(deps, () =>
    checkEntitlement(deps.sql, { userId: params.user_id, sku: params.stock_keeping_unit }),
  );
  if (!found) throw new ApiError(404, "NOT_FOUND", "entitlement not found");
  const etag = etagOf(found.version);
  if (noneMatchHits(ifNoneMatch, etag)) return new Response(null, { status: 304, headers: { etag } });
  return new Response(JSON.stringify(found), { headers: { "content-type": "application/json", etag } });
}
