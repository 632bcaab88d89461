// POST /v1/entitlements/extensions (write scope): an idempotent command like a grant (command-route.ts).
import { badRequest } from "../../../shared/http/errors.ts";
import { commandRoute } from "../../edge/command-route.ts";
import type { RouteDeps } from "../commands/run.ts";
import { EntitlementDetail } from "../entitlements/model.ts";
import { checkExpiresAt, checkFields, readJsonObject } from "../entitlements/validation.ts";
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
  return commandRoute<ExtensionBody>(deps, {
    path: "/v1/entitlements/extensions",
    operationId: "extendEntitlement",
    summary: "Move an ACTIVE entitlement's expires_at later (idempotent per Idempotency-Key)",
    read: (request) => readExtensionBody(request, deps.now()),
    body: Schema,
    response: EntitlementDetail,
    execute: (command) => executeExtension(deps, command),
    render: renderExtensionReply,
  });
}
