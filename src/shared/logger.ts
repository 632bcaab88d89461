// Structured JSON logs (pino). Secrets never reach a log line: the redaction list covers every place a token, an
// Authorization header, a webhook secret or a database password could appear.
import pino, { type Logger } from "pino";

export type { Logger };

const SECRET_KEYS = [
  "authorization",
  "token",
  "tokens",
  "secret",
  "password",
  "NOTIFICATION_WEBHOOK_SECRET",
  "NOTIFICATION_DEBUG_API_TOKEN",
];
const URL_KEYS = ["url", "databaseUrl", "connectionString", "DATABASE_URL", "NATS_URL"];

/** Each secret key at the top level and up to three levels down (pino's wildcards match exactly one level). */
const atDepths = (key: string) => [key, `*.${key}`, `*.*.${key}`, `*.*.*.${key}`];

export const REDACTED_PATHS = [...SECRET_KEYS, ...URL_KEYS].flatMap(atDepths);

/** A URL keeps everything but its password, so logs still say which host was meant; every other secret goes. */
export function censor(value: unknown, path: string[]): string {
  const key = path[path.length - 1] ?? "";
  if (URL_KEYS.includes(key) && typeof value === "string") return value.replace(/\/\/([^:/@]*):[^@/]*@/g, "//$1:***@");
  return "[redacted]";
}

export function createLogger(options: {
  level: string;
  service: string;
  destination?: pino.DestinationStream;
}): Logger {
  return pino(
    {
      level: options.level,
      base: { service: options.service },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED_PATHS, censor },
    },
    options.destination ?? pino.destination({ fd: 1, sync: false }),
  );
}

/** A logger that drops everything, for tests that do not look at logs. */
export const silentLogger: Logger = pino({ level: "silent" });
