// Structured JSON logs (pino). Secrets never reach a log line: the redaction list covers every place a token, an
// Authorization header, a webhook secret or a database password could appear.
import pino, { type Logger } from "pino";

export type { Logger };

export const REDACTED_PATHS = [
  "authorization",
  "*.authorization",
  "headers.authorization",
  "*.headers.authorization",
  "token",
  "*.token",
  "secret",
  "*.secret",
  "password",
  "*.password",
];

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
      redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
    },
    options.destination ?? pino.destination({ fd: 1, sync: false }),
  );
}

/** A logger that drops everything, for tests that do not look at logs. */
export const silentLogger: Logger = pino({ level: "silent" });
