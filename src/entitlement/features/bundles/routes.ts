// POST /v1/entitlements/bundle-grants (write scope): an idempotent command like a grant (command-route.ts).
import { commandRoute } from "../../edge/command-route.ts";
import type { RouteDeps } from "../commands/run.ts";
import { type BundleBody, BundleResponse, renderBundleReply, BundleBody as Schema } from "./model.ts";
import { executeBundle } from "./service.ts";
import { readBundleBody } from "./validation.ts";

export function bundleRoutes(deps: RouteDeps) {
  return commandRoute<BundleBody>(deps, {
    path: "/v1/entitlements/bundle-grants",
    operationId: "grantBundle",
    summary: "Grant 1–100 items of one user in one transaction (idempotent per Idempotency-Key)",
    read: (request) => readBundleBody(request, deps.now()),
    body: Schema,
    response: BundleResponse,
    execute: (command) => executeBundle(deps, command),
    render: renderBundleReply,
  });
}
