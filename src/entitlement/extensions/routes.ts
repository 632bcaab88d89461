// POST /v1/entitlements/extensions (write scope): validated in the parse hook like a grant, run through the gate.
import { Elysia } from "elysia";
import { badRequest } from "../../shared/http/errors.ts";
import { COMMAND_ERRORS } from "../api-doc.ts";
import { scopeMacro } from "../auth/scope.ts";
import { CommandHeaders, EntitlementDetail } from "../entitlements/model.ts";
import { type RouteDeps, unavailableOr } from "../entitlements/routes.ts";
import {
  checkExpiresAt,
  checkFields,
  checkIdempotencyKey,
  readJsonObject,
  traceIdOf,
} from "../entitlements/validation.ts";
import { type ExtensionBody, renderExtensionReply, ExtensionBody as Schema } from "./model.ts";
import { executeExtension } from "./service.ts";

/** The command's fields, then the required expires_at (in the future, at most 10 years ahead). */
async function readExtensionBody(request: Request, now: Date): Promise<ExtensionBody> {
  const json = await readJsonObject(request);
  const body = checkFields(json);
  if (json.expires_at === undefined || json.expires_at === null) throw badRequest("expires_at is required");
  return { ...body, expires_at: checkExpiresAt(json.expires_at, now) };
}

export function extensionRoutes(deps: RouteDeps) {
  return new Elysia({ name: "extension-routes", strictPath: true }).use(scopeMacro).post(
    "/v1/entitlements/extensions",
    async ({ body, request }) => {
      const command = {
        body,
        idempotencyKey: checkIdempotencyKey(request.headers),
        traceId: traceIdOf(request.headers),
        caller: deps.callerOf(request),
      };
      const reply = await deps.gate
        .run(() => executeExtension(deps, command))
        .catch((error) => unavailableOr(deps.log, error));
      return new Response(renderExtensionReply(reply.status, reply.body), {
        status: reply.status,
        headers: { "content-type": "application/json" },
      });
    },
    {
      scope: "write",
      // As for grants: the first parser returns the checked body or throws; "json" only feeds /openapi.json.
      parse: [
        async ({ request }) => {
          checkIdempotencyKey(request.headers);
          return readExtensionBody(request, deps.now());
        },
        "json" as const,
      ],
      body: Schema,
      headers: CommandHeaders,
      response: { 200: EntitlementDetail, ...COMMAND_ERRORS },
      detail: {
        operationId: "extendEntitlement",
        summary: "Move an ACTIVE entitlement's expires_at later (idempotent per Idempotency-Key)",
        tags: ["entitlements"],
      },
    },
  );
}
