// Configuration: environment variables only, each described by a TypeBox schema that carries its default and its
// meaning. `parseEnv` reads every variable once, reports every problem in one go and never guesses.
import { type Static, type TObject, type TSchema, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { hideCredentials } from "./credentials.ts";
import { databaseUrlProblem } from "./db.ts";

/** Exit code for invalid configuration (sysexits.h EX_CONFIG; docs/configuration.md). */
export const EXIT_CONFIG = 78;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/;

/** `250ms`, `1s`, `2m`, `24h`, `7d`; a bare number means milliseconds. Returns undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  if (!match) return undefined;
  const ms = Number(match[1]) * (UNIT_MS[match[2] ?? "ms"] ?? 1);
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}

type Doc = { description: string };

/** A duration variable, decoded to milliseconds. `minimum` is in milliseconds too. */
export const Duration = (defaultValue: string, doc: Doc & { minimum?: number }) =>
  Type.Integer({ default: defaultValue, kind: "duration", minimum: doc.minimum ?? 0, description: doc.description });
export const Int = (defaultValue: number, doc: Doc & { minimum?: number; maximum?: number }) =>
  Type.Integer({ default: defaultValue, minimum: doc.minimum ?? 0, ...doc });
export const Num = (defaultValue: number, doc: Doc & { minimum?: number; maximum?: number }) =>
  Type.Number({ default: defaultValue, ...doc });
export const Bool = (defaultValue: boolean, doc: Doc) => Type.Boolean({ default: defaultValue, ...doc });
export const Str = (defaultValue: string, doc: Doc & { minLength?: number; pattern?: string }) =>
  Type.String({ default: defaultValue, ...doc });
export const NonBlank = (defaultValue: string, doc: Doc) =>
  Type.String({ default: defaultValue, minLength: 1, pattern: "\\S", ...doc });
export const OneOf = <T extends string>(values: readonly T[], defaultValue: T, doc: Doc) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    { default: defaultValue, ...doc },
  );
/** A variable without a default: empty means "not set". */
export const Optional = (doc: Doc & { pattern?: string }) => Type.Optional(Type.String({ default: undefined, ...doc }));

/** A cross-variable rule, e.g. min ≤ max; returns messages naming the variables (one or several), or undefined. */
export type Rule<T> = (config: T) => string | string[] | undefined;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

function describeExpected(schema: TSchema): string {
  if (schema.kind === "duration") return "a duration such as 250ms, 1s, 2m, 24h or 7d (a bare number means ms)";
  if (schema.anyOf) return `one of ${schema.anyOf.map((s: TSchema) => s.const).join(", ")}`;
  const bounds = [
    schema.minimum !== undefined ? `>= ${schema.minimum}` : "",
    schema.maximum !== undefined ? `<= ${schema.maximum}` : "",
  ]
    .filter(Boolean)
    .join(" and ");
  switch (schema.type) {
    case "integer":
      return `an integer${bounds ? ` ${bounds}` : ""}`;
    case "number":
      return `a number${bounds ? ` ${bounds}` : ""}`;
    case "boolean":
      return "true or false";
    default:
      return schema.minLength ? "a non-blank string" : "a string";
  }
}

function decodeOne(schema: TSchema, raw: string): unknown {
  if (schema.kind === "duration") return parseDuration(raw);
  switch (schema.type) {
    case "integer":
    case "number":
      return raw.trim() === "" ? Number.NaN : Number(raw);
    case "boolean":
      return raw === "true" ? true : raw === "false" ? false : raw;
    default:
      return raw;
  }
}

/** A secret variable's whole value, or the credentials of a URL-like one, so a problem can be printed safely. */
export function redact(name: string, value: string): string {
  if (/SECRET|TOKEN|PASSWORD/i.test(name)) return "<redacted>";
  return hideCredentials(value);
}

/**
 * Reads `env` against `schema`: an unset (or empty) variable takes the schema default; every bad value is collected
 * with the variable name, the value and what is expected, then all are thrown together as one ConfigError.
 */
export function parseEnv<S extends TObject>(
  schema: S,
  env: Record<string, string | undefined>,
  rules: Rule<Static<S>>[] = [],
): Static<S> {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(schema.properties) as [string, TSchema][]) {
    const raw = env[name];
    if (raw === undefined || raw === "") {
      const fallback = property.default;
      out[name] = fallback === undefined ? undefined : decodeOne(property, String(fallback));
      continue;
    }
    const value = decodeOne(property, raw);
    if (value === undefined || (typeof value === "number" && Number.isNaN(value)) || !Value.Check(property, value)) {
      problems.push(`${name}=${JSON.stringify(redact(name, raw))} is invalid: expected ${describeExpected(property)}`);
      continue;
    }
    out[name] = value;
  }
  // Cross-variable rules run in the same pass; a rule that reads a variable already reported as invalid is skipped,
  // so every problem is reported at once without a rule judging a value that was never parsed.
  const bad = new Set(problems.map((p) => p.slice(0, p.indexOf("="))));
  const skip = Symbol("skip");
  const checked = new Proxy(out, {
    get: (target, key) => {
      if (typeof key === "string" && bad.has(key)) throw skip;
      return target[key as string];
    },
  });
  for (const rule of rules) {
    try {
      const problem = rule(checked as Static<S>);
      if (problem) problems.push(...(Array.isArray(problem) ? problem : [problem]));
    } catch (error) {
      if (error !== skip) throw error;
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return out as Static<S>;
}

/**
 * DATABASE_URL, and DATABASE_MIGRATION_URL when set, must be URLs createSql can use (TLS files readable, a known
 * sslmode); each problem names the variable and hides the credentials.
 */
export const databaseUrlReadable: Rule<{ DATABASE_URL: string; DATABASE_MIGRATION_URL?: string }> = (e) =>
  (["DATABASE_URL", "DATABASE_MIGRATION_URL"] as const).flatMap((name) => {
    const url = e[name];
    const problem = url === undefined ? undefined : databaseUrlProblem(url);
    return problem ? [`${name}=${JSON.stringify(hideCredentials(url as string))} is invalid: ${problem}`] : [];
  });

/** `a <= b` for two variables of the same schema, reported with both names and values. */
export function notGreater<T extends Record<string, unknown>>(low: keyof T & string, high: keyof T & string): Rule<T> {
  return (c) =>
    (c[low] as number) > (c[high] as number)
      ? `${low}=${c[low]} must not be greater than ${high}=${c[high]}`
      : undefined;
}

type BackoffKey<P extends string> =
  `${P}_BACKOFF_${"BASE" | "MAX" | "MIN" | "EXPONENT_BASE" | "JITTER_MIN" | "JITTER_MAX"}`;

/** The six backoff variables under one prefix (ENTITLEMENT_OUTBOX, NOTIFICATION_DELIVERY). */
export function backoffVariables<P extends string>(prefix: P) {
  return {
    [`${prefix}_BACKOFF_BASE`]: Duration("1s", { description: "Backoff of the first retry, before jitter." }),
    [`${prefix}_BACKOFF_MAX`]: Duration("60s", { description: "Cap of the exponential backoff, before jitter." }),
    [`${prefix}_BACKOFF_MIN`]: Duration("1s", { description: "Floor of the backoff, after jitter." }),
    [`${prefix}_BACKOFF_EXPONENT_BASE`]: Num(2.0, { minimum: 1, description: "Growth factor per attempt." }),
    [`${prefix}_BACKOFF_JITTER_MIN`]: Num(0.5, { minimum: 0, description: "Lower bound of the jitter factor." }),
    [`${prefix}_BACKOFF_JITTER_MAX`]: Num(1.5, { minimum: 0, description: "Upper bound of the jitter factor." }),
  } as Record<BackoffKey<P>, ReturnType<typeof Num>>;
}

/**
 * The variables of a retried item under one prefix: its attempts (10 by default), its backoff, and how much of an
 * error message it keeps (1000 characters by default).
 */
export function retryVariables<P extends string>(prefix: P, doc: { attempts: string; errorMessage: string }) {
  return {
    [`${prefix}_MAX_ATTEMPTS`]: Int(10, { minimum: 1, description: doc.attempts }),
    ...backoffVariables(prefix),
    [`${prefix}_ERROR_MESSAGE_MAX_LENGTH`]: Int(1000, { minimum: 1, description: doc.errorMessage }),
  } as Record<`${P}_${"MAX_ATTEMPTS" | "ERROR_MESSAGE_MAX_LENGTH"}`, ReturnType<typeof Int>> &
    ReturnType<typeof backoffVariables<P>>;
}

/** min ≤ max for the backoff floor/cap and for the jitter bounds. */
export function backoffRules<P extends string>(prefix: P): Rule<Record<BackoffKey<P>, number>>[] {
  const key = (name: string) => `${prefix}_BACKOFF_${name}` as BackoffKey<P>;
  return [notGreater(key("MIN"), key("MAX")), notGreater(key("JITTER_MIN"), key("JITTER_MAX"))];
}

/** The parsed backoff variables of `prefix` as the policy the retry code takes. */
export function backoffPolicy<P extends string>(prefix: P, e: Record<BackoffKey<P>, number>) {
  return {
    baseMs: e[`${prefix}_BACKOFF_BASE`],
    maxMs: e[`${prefix}_BACKOFF_MAX`],
    minMs: e[`${prefix}_BACKOFF_MIN`],
    exponentBase: e[`${prefix}_BACKOFF_EXPONENT_BASE`],
    jitterMin: e[`${prefix}_BACKOFF_JITTER_MIN`],
    jitterMax: e[`${prefix}_BACKOFF_JITTER_MAX`],
  };
}

/** SERVER_PORT, the older name of the port; PORT wins when both are set. */
export const ServerPortAlias = {
  SERVER_PORT: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 65535,
      description: "The Java original's server.port; used only when PORT is unset.",
    }),
  ),
};

/** PORT when it is set, else SERVER_PORT, else PORT's default. */
export function httpPort(env: Record<string, string | undefined>, parsed: { PORT: number; SERVER_PORT?: number }) {
  return env.PORT === undefined || env.PORT === "" ? (parsed.SERVER_PORT ?? parsed.PORT) : parsed.PORT;
}

/** The settings both services make alike of CommonConfig's variables. */
export function commonSettings(
  env: Record<string, string | undefined>,
  e: Pick<
    Static<TObject<typeof CommonConfig>>,
    "HOST" | "DATABASE_URL" | "DATABASE_MIGRATION_URL" | "DATABASE_POOL_MAX" | "DATABASE_START_TIMEOUT"
  > &
    Pick<Static<TObject<typeof CommonConfig>>, "LOG_LEVEL" | "HOSTNAME"> & { PORT: number; SERVER_PORT?: number },
) {
  return {
    http: { host: e.HOST, port: httpPort(env, e) },
    database: {
      url: e.DATABASE_URL,
      migrationUrl: e.DATABASE_MIGRATION_URL ?? e.DATABASE_URL,
      poolMax: e.DATABASE_POOL_MAX,
      startTimeoutMs: e.DATABASE_START_TIMEOUT,
    },
    log: { level: e.LOG_LEVEL },
    workerId: e.HOSTNAME,
  };
}

/** Variables both services read. */
export const CommonConfig = {
  DATABASE_URL: NonBlank("postgres://postgres@127.0.0.1:5432/postgres", {
    description:
      "PostgreSQL connection URL (both services may share one database; each uses its own schema). Takes libpq's sslmode (disable, allow, prefer, require, verify-ca, verify-full; default prefer), sslrootcert (a CA file, or system), sslcert and sslkey; production sets sslmode=verify-full and sslrootcert (docs/security.md).",
  }),
  DATABASE_MIGRATION_URL: Optional({
    description:
      "PostgreSQL URL of the role that runs migrations (serve's automatic ones and `migrate`); default DATABASE_URL. Set it to the schema's owner so that DATABASE_URL can be a runtime login role, a member of entitlement_runtime or notification_runtime with only DML on its own schema (docs/security.md). Takes the same TLS parameters as DATABASE_URL.",
  }),
  DATABASE_POOL_MAX: Int(10, { minimum: 1, maximum: 1000, description: "Maximum PostgreSQL connections per process." }),
  DATABASE_START_TIMEOUT: Duration("60s", {
    minimum: 0,
    description:
      "How long `serve` waits at start for a database that is not accepting connections yet (starting up, shutting down, recovering, refusing the connection, out of connections), trying again with backoff; then it exits 1. A refused login or certificate, a missing database or a migration's own error exit 1 at once. 0: no wait.",
  }),
  NATS_URL: NonBlank("nats://127.0.0.1:4222", {
    description:
      "NATS server URL(s), comma-separated: [nats://|tls://][user:password@]host[:port], checked at boot (no other scheme, no empty entry, a port 1 to 65535). Unreachable, the service starts anyway and retries with backoff: one warning per outage, `nats_connected` 0.",
  }),
  NATS_ENABLED: Bool(true, {
    description:
      "Connect to NATS at all (false: the APIs run; Entitlement publishes nothing, Notification consumes nothing).",
  }),
  NATS_CONNECTION_TIMEOUT: Duration("5s", { minimum: 1, description: "Timeout of one NATS connection attempt." }),
  HOST: NonBlank("0.0.0.0", { description: "Address the HTTP server binds." }),
  LOG_LEVEL: OneOf(["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const, "info", {
    description: "pino log level.",
  }),
  HOSTNAME: Optional({
    description: "Worker id written to locked_by (default: the OS host name); the process id is always appended.",
  }),
  OTEL_EXPORTER_OTLP_ENDPOINT: Optional({
    pattern: "^https?://",
    description:
      "OTLP/HTTP base URL (/v1/traces is appended): spans are exported when set. Unset: nothing is exported, trace ids still propagate and appear in logs. The SDK's other OTEL_EXPORTER_OTLP_* variables, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES apply.",
  }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Optional({
    pattern: "^https?://",
    description: "Full OTLP/HTTP traces URL; when set, spans are exported there (it wins over the base URL).",
  }),
};
