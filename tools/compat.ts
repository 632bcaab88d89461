// Compatibility with the last release (docs/releasing.md). compat/ holds that release's OpenAPI documents and an image
// of its proto/ schema, committed, so a clean clone (CI) has the baseline without git history or tags. The current
// code must not break either, except for OpenAPI changes recorded with a reason in compat/accepted-breaking.json.
//   bun run compat              report breaking changes; exit 1 on any that is not recorded (tests do the same)
//   bun run compat --baseline   make the current state the baseline (a step of cutting a release)
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { apiDiff } from "api-smart-diff";
import { formatWithBiome } from "./biome-format.ts";
import { type DocumentedService, OPENAPI_DOCS } from "./docs-openapi.ts";

const root = resolve(import.meta.dir, "..");
export const COMPAT_DIR = join(root, "compat");
export const PROTO_BASELINE = join(COMPAT_DIR, "proto-image.json");
export const ACCEPTED_FILE = join(COMPAT_DIR, "accepted-breaking.json");
export const BASELINE_DOCS: Record<DocumentedService, string> = {
  entitlement: join(COMPAT_DIR, "openapi.json"),
  notification: join(COMPAT_DIR, "openapi-notification.json"),
};
const SERVICES = Object.keys(OPENAPI_DOCS) as DocumentedService[];
const buf = join(root, "node_modules/.bin/buf");

/** One difference that can break a client written against the baseline. */
export type BreakingChange = { id: string; description: string };
/** A breaking change made on purpose: `id` as reported, and why (it also belongs in CHANGELOG.md). */
export type AcceptedChange = { service: DocumentedService; id: string; reason: string };

/**
 * The document with every `#/components/schemas/…` reference replaced by the schema it names: a schema moved into a
 * named component is the same contract, and the diff then compares what each use means, not how it is spelled.
 */
export function inlineSchemas(doc: unknown): unknown {
  const schemas = ((doc as { components?: { schemas?: Record<string, unknown> } }).components?.schemas ?? {}) as Record<
    string,
    unknown
  >;
  const inline = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(inline);
    if (typeof value !== "object" || value === null) return value;
    const ref = (value as { $ref?: unknown }).$ref;
    if (typeof ref === "string" && ref.startsWith("#/components/schemas/")) {
      return inline(schemas[ref.slice("#/components/schemas/".length)]);
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inline(v)]));
  };
  const { components, ...rest } = doc as Record<string, unknown>;
  const { schemas: _named, ...otherComponents } = (components ?? {}) as Record<string, unknown>;
  return { ...(inline(rest) as object), components: otherComponents };
}

/**
 * The breaking differences from `before` to `after`, as api-smart-diff classifies them (a removed operation, a new
 * required parameter or body field, a narrowed or retyped schema, a new value in a response enum, ...). The id is the
 * action and the JSON Pointer of the change, stable across runs.
 */
export function breakingChanges(before: unknown, after: unknown): BreakingChange[] {
  return apiDiff(inlineSchemas(before), inlineSchemas(after))
    .filter((d) => d.type === "breaking")
    .map((d) => ({
      id: `${d.action} #/${d.path.map((k) => String(k).replace(/~/g, "~0").replace(/\//g, "~1")).join("/")}`,
      description: d.description ?? "",
    }));
}

const readJson = (path: string): unknown => JSON.parse(readFileSync(path, "utf8"));

export function readAccepted(): AcceptedChange[] {
  return existsSync(ACCEPTED_FILE) ? (readJson(ACCEPTED_FILE) as AcceptedChange[]) : [];
}

/** Breaking changes of the committed document against the baseline that compat/accepted-breaking.json lacks. */
export function unacceptedChanges(service: DocumentedService, accepted = readAccepted()): BreakingChange[] {
  const changes = breakingChanges(readJson(BASELINE_DOCS[service]), readJson(OPENAPI_DOCS[service]));
  const ok = new Set(accepted.filter((a) => a.service === service).map((a) => a.id));
  return changes.filter((c) => !ok.has(c.id));
}

/** Records that match no current change: left over from a release (the baseline moved on) or mistyped. */
export function staleAcceptances(accepted = readAccepted()): AcceptedChange[] {
  // One diff per service, not one per record: a diff of a whole document takes a fair fraction of a second.
  const current = new Map(
    SERVICES.map((service) => [
      service,
      new Set(breakingChanges(readJson(BASELINE_DOCS[service]), readJson(OPENAPI_DOCS[service])).map((c) => c.id)),
    ]),
  );
  return accepted.filter((a) => !current.get(a.service)?.has(a.id));
}

/**
 * `buf breaking` of a workspace (a folder with buf.yaml and proto/) against the baseline image, with the rules of
 * buf.yaml's `breaking` section: exit 0 when compatible, else buf's findings.
 */
export function protoBreaking(workspace = root): { ok: boolean; output: string } {
  const run = Bun.spawnSync([buf, "breaking", "--against", PROTO_BASELINE], { cwd: workspace });
  return { ok: run.exitCode === 0, output: `${run.stdout.toString()}${run.stderr.toString()}`.trim() };
}

export const RECORD_HINT =
  "if the break is deliberate, add {service, id, reason} to compat/accepted-breaking.json, note it in CHANGELOG.md " +
  "and plan a major version (docs/releasing.md); otherwise make the change additive";

/** Makes the current proto/ and docs/openapi*.json the baseline, and clears the accepted list. */
export function writeBaseline(): void {
  const image = Bun.spawnSync([buf, "build", "--exclude-source-info", "-o", "-#format=json"], { cwd: root });
  if (image.exitCode !== 0) throw new Error(`buf build failed: ${image.stderr.toString()}`);
  writeFileSync(PROTO_BASELINE, formatWithBiome(PROTO_BASELINE, image.stdout.toString()));
  for (const service of SERVICES) writeFileSync(BASELINE_DOCS[service], readFileSync(OPENAPI_DOCS[service]));
  writeFileSync(ACCEPTED_FILE, "[]\n");
}

function report(): number {
  let failures = 0;
  const proto = protoBreaking();
  console.log(proto.ok ? "proto/: compatible with compat/proto-image.json" : `proto/: breaking\n${proto.output}`);
  if (!proto.ok) failures += 1;
  for (const service of SERVICES) {
    const changes = unacceptedChanges(service);
    for (const c of changes) console.log(`${relative(root, OPENAPI_DOCS[service])}: ${c.id}\n  ${c.description}`);
    failures += changes.length;
  }
  for (const stale of staleAcceptances()) {
    console.log(`compat/accepted-breaking.json: no such change any more, remove it: ${stale.service} ${stale.id}`);
    failures += 1;
  }
  if (failures > 0) console.log(RECORD_HINT);
  else console.log("OpenAPI documents: no unrecorded breaking change against compat/");
  return failures === 0 ? 0 : 1;
}

if (import.meta.main) {
  if (Bun.argv.includes("--baseline")) {
    writeBaseline();
    console.log("compat/ now holds the current proto/ and OpenAPI documents as the baseline");
  } else {
    process.exit(report());
  }
}
