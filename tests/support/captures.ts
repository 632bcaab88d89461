// What unit tests read back from the code under test: the problems of a refused configuration, and the lines of a
// JSON log.
import { Writable } from "node:stream";
import pino from "pino";
import { ConfigError } from "../../src/shared/config.ts";

/** The problems `load` refused its configuration with; throws if it loaded (or failed another way). */
export function configProblems(load: () => unknown): string[] {
  try {
    load();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

/** A pino logger at info whose lines are kept, parsed, in `lines`. */
export function capturedLog() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { lines, log: pino({ level: "info" }, destination) };
}
