// POST /v1/entitlements/bundle-grants (write scope): validated in the parse hook like a grant, run through the gate.
import { Elysia } from "elysia";
import { COMMAND_ERRORS } from "../api-doc.ts";
import { scopeMacro } from "../auth/scope.ts";
import { CommandHeaders } from "../entitlements/model.ts";
import { type RouteDeps, unavailableOr } from "../entitlements/routes.ts";
import { checkIdempotencyKey, traceIdOf } from "../entitlements/validation.ts";
import { BundleBody, BundleResponse, renderBundleReply } from "./model.ts";
import { executeBundle } from "./service.ts";
import { readBundleBody } from "./validation.ts";

export function bundleRoutes(deps: RouteDeps) {
  return new Elysia({ name: "bundle-routes", strictPath: true }).use(scopeMacro).post(
    "/v1/entitlements/bundle-grants",
    async ({ body, request }) => {
      const command = {
        body,
        idempotencyKey: checkIdempotencyKey(request.headers),
        traceId: traceIdOf(request.headers),
        caller: deps.callerOf(request),
      };
      const reply = await deps.gate
        .run(() => executeBundle(deps, command))
        .catch((error) => unavailableOr(deps.log, error));
      return new Response(renderBundleReply(reply.status, reply.body), {
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
          return readBundleBody(request, deps.now());
        },
        "json" as const,
      ],
      body: BundleBody,
      headers: CommandHeaders,
      response: { 200: BundleResponse, ...COMMAND_ERRORS },
      detail: {
        operationId: "grantBundle",
        summary: "Grant 1–100 items of one user in one transaction (idempotent per Idempotency-Key)",
        tags: ["entitlements"],
      },
    },
  );
}
