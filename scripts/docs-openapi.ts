// Writes the OpenAPI documents of both services into docs/ from the running apps' own /openapi.json, which Elysia
// builds from the same TypeBox schemas that validate requests: the committed reference cannot drift from the code.
// `bun run docs:openapi` rewrites them; `--check` exits 1 when one is stale (tests/ship/openapi.unit.test.ts too).
//   docs/openapi.json               Entitlement (the API integrators call)
//   docs/openapi-notification.json  Notification (probes, metrics, the debug inbox)
import { readFileSync, writeFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { createApp as createEntitlementApp } from "../src/entitlement/app.ts";
import { createApp as createNotificationApp } from "../src/notification/app.ts";
import type { Sql } from "../src/shared/db.ts";
import { silentLogger } from "../src/shared/logger.ts";
import { createRegistry } from "../src/shared/metrics.ts";
import { formatWithBiome } from "./biome-format.ts";

const root = resolve(import.meta.dir, "..");

export const OPENAPI_DOCS = {
  entitlement: resolve(root, "docs/openapi.json"),
  notification: resolve(root, "docs/openapi-notification.json"),
} as const;
export type DocumentedService = keyof typeof OPENAPI_DOCS;

/** Building the document never touches the database; a query would be a bug here, so it throws. */
const noDatabase = (() => {
  throw new Error("the OpenAPI generator never queries the database");
}) as unknown as Sql;

/** The service's app as documented: real routes and schemas, no database, no tokens. */
export function documentedApp(service: DocumentedService) {
  if (service === "entitlement") {
    return createEntitlementApp({
      sql: noDatabase,
      log: silentLogger,
      now: () => new Date(0),
      idempotencyTtlHours: 24,
      // The document is the same whatever the tokens; /openapi.json itself needs none here.
      auth: { disabled: true, tokens: [], metricsPublic: true },
      version: pkg.version,
    });
  }
  return createNotificationApp({
    sql: noDatabase,
    log: silentLogger,
    registry: createRegistry("notification"),
    version: pkg.version,
    consumerReady: undefined,
    // Documented as enabled, so the debug inbox is in the reference (it is off by default: 404).
    debugApi: { enabled: true, token: "documented" },
  });
}

const HEAD = ["openapi", "info", "servers", "security", "tags", "paths", "components"];

/** The document as committed: what the service serves at /openapi.json, formatted by Biome. */
export async function renderOpenApiDoc(service: DocumentedService): Promise<string> {
  const response = await documentedApp(service).handle(new Request("http://localhost/openapi.json"));
  if (response.status !== 200) throw new Error(`${service} /openapi.json answered ${response.status}`);
  const doc = (await response.json()) as Record<string, unknown>;
  // The conventional order for readers (the plugin puts `openapi` and `paths` after the header it was given).
  const ordered = Object.fromEntries(
    [...HEAD, ...Object.keys(doc).filter((k) => !HEAD.includes(k))].filter((k) => k in doc).map((k) => [k, doc[k]]),
  );
  return formatWithBiome(OPENAPI_DOCS[service], `${JSON.stringify(ordered, null, 2)}\n`);
}

export const STALE_HINT = "run `bun run docs:openapi` and commit the result";

if (import.meta.main) {
  const check = Bun.argv.includes("--check");
  let stale = 0;
  for (const service of Object.keys(OPENAPI_DOCS) as DocumentedService[]) {
    const path = OPENAPI_DOCS[service];
    const expected = await renderOpenApiDoc(service);
    if (!check) {
      writeFileSync(path, expected);
      console.log(`wrote ${relative(root, path)}`);
    } else if (readFileSync(path, "utf8") !== expected) {
      console.error(`${relative(root, path)} is stale: ${STALE_HINT}`);
      stale += 1;
    }
  }
  if (check && stale === 0) console.log("docs/openapi*.json are up to date");
  process.exit(stale === 0 ? 0 : 1);
}
