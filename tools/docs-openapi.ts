// Writes the OpenAPI documents of both services into docs/ from the running apps' own /openapi.json, which Elysia
// builds from the same TypeBox schemas that validate requests: the committed document cannot drift from the code.
// `bun run docs:openapi` rewrites them; `--check` exits 1 when one is stale (tests/ship/openapi.unit.test.ts too).
//   docs/openapi.json               Entitlement (the API integrators call)
//   docs/openapi-notification.json  Notification (probes, metrics, the webhook endpoints admin API, the send API, the
//                                   debug inbox, the players' routes)
//   docs/examples/entitlement-api.ts the TypeScript types openapi-typescript generates from docs/openapi.json, which
//                                    docs/examples/client.ts (an openapi-fetch client) is written against
import { readFileSync, writeFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import openapiTS, { astToString } from "openapi-typescript";
import pkg from "../package.json" with { type: "json" };
import { createApp as createEntitlementApp } from "../src/entitlement/app.ts";
import { createApp as createNotificationApp } from "../src/notification/app.ts";
import { createSecretBox } from "../src/notification/features/endpoints/secrets.ts";
import type { StreamHub } from "../src/notification/features/players/hub.ts";
import { parseTokenEntries, tokenEntryLine } from "../src/shared/auth/tokens.ts";
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
    // Documented as enabled, so the debug inbox is in the document (it is off by default: 404).
    debugApi: { enabled: true, token: "documented" },
    // With a token, so the admin API is in the document (without NOTIFICATION_AUTH_TOKENS it is 404).
    endpoints: {
      tokens: parseTokenEntries(tokenEntryLine("documented", "documented", "read+write")).entries,
      service: { sql: noDatabase, now: () => new Date(0), box: createSecretBox(Buffer.alloc(32)), allowPrivate: false },
    },
    // The send API is served with the admin API's tokens.
    send: { sql: noDatabase, now: () => new Date(0) },
    // Documented as configured (an issuer set), so the players' routes are in the document; nothing is called.
    players: {
      sql: noDatabase,
      now: () => new Date(0),
      authenticate: () => Promise.reject(new Error("the OpenAPI generator never authenticates")),
      hub: {} as StreamHub,
    },
    // With both platforms on, so the players' devices and preferences are in the document; nothing is called.
    push: {
      sql: noDatabase,
      now: () => new Date(0),
      configured: { webpush: true, fcm: true },
      allowPrivate: false,
      authenticate: () => Promise.reject(new Error("the OpenAPI generator never authenticates")),
    },
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

export const CLIENT_TYPES = resolve(root, "docs/examples/entitlement-api.ts");

/** The client types generated from the committed Entitlement document, formatted by Biome. */
export async function renderClientTypes(): Promise<string> {
  const ast = await openapiTS(JSON.parse(readFileSync(OPENAPI_DOCS.entitlement, "utf8")));
  const header = "// Generated by `bun run docs:openapi` (openapi-typescript) from docs/openapi.json: do not edit.\n";
  return formatWithBiome(CLIENT_TYPES, `${header}${astToString(ast)}`);
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
  const types = await renderClientTypes();
  if (!check) {
    writeFileSync(CLIENT_TYPES, types);
    console.log(`wrote ${relative(root, CLIENT_TYPES)}`);
  } else if (readFileSync(CLIENT_TYPES, "utf8") !== types) {
    console.error(`${relative(root, CLIENT_TYPES)} is stale: ${STALE_HINT}`);
    stale += 1;
  }
  if (check && stale === 0) console.log("docs/openapi*.json and the client types are up to date");
  process.exit(stale === 0 ? 0 : 1);
}
