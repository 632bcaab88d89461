// Structured JSON logs (pino). Secrets never reach a log line: the redaction list covers every place a token, an
// Authorization header or a database password could appear, plus the secret variables a service names
// (`secretKeys`, e.g. its webhook secret).
import pino, { type Logger } from "pino";
import { hideCredentials } from "./credentials.ts";
import { traceLogFields } from "./trace-context.ts";

export type { Logger };

const SECRET_KEYS = ["authorization", "token", "tokens", "secret", "password", "pass"];
const URL_KEYS = [
  "url",
  "migrationUrl",
  "databaseUrl",
  "connectionString",
  "DATABASE_URL",
  "DATABASE_MIGRATION_URL",
  "NATS_URL",
  // What a URL parser refused: Node's and Bun's "Invalid URL" TypeError carries the whole text as `input`.
  "input",
];

/** Each secret key at the top level and up to three levels down (pino's wildcards match exactly one level). */
const atDepths = (key: string) => [key, `*.${key}`, `*.*.${key}`, `*.*.*.${key}`];

/** The redacted paths of a logger, with the service's own secret variable names. */
export function redactedPaths(secretKeys: readonly string[] = []): string[] {
  return [...SECRET_KEYS, ...secretKeys, ...URL_KEYS].flatMap(atDepths);
}

/** A URL keeps everything but its password, so logs still say which host was meant; every other secret goes. */
export function censor(value: unknown, path: string[]): string {
  const key = path[path.length - 1] ?? "";
  if (URL_KEYS.includes(key) && typeof value === "string") return hideCredentials(value);
  return "[redacted]";
}

export function createLogger(options: {
  level: string;
  service: string;
  /** Names of the service's secret variables, redacted wherever they appear (a configuration logged by mistake). */
  secretKeys?: readonly string[];
  destination?: pino.DestinationStream;
}): Logger {
  return pino(
    {
      level: options.level,
      base: { service: options.service },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: redactedPaths(options.secretKeys), censor },
      // Inside a span (a request, a publish, a consume, a delivery) every line carries trace_id and span_id.
      mixin: traceLogFields,
    },
    options.destination ?? pino.destination({ fd: 1, sync: false }),
  );
}

/** A logger that drops everything, for tests that do not look at logs. */
export const silentLogger: Logger = pino({ level: "silent" });
