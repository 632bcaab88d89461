// What every operator command opens: the service's configuration from the environment and one PostgreSQL connection
// of its own. Each command prints one human-readable line per fact or change and returns its exit code.
import { withConfig } from "./cli.ts";
import { createSql, type Sql } from "./db.ts";

export type Out = (line: string) => void;

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this expression's purpose
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/**
 * A line as it may reach an operator's terminal: what the commands print comes partly from stored data (ids, error
 * texts), and an ESC or a newline there could rewrite the screen or forge lines. Every C0/C1 control character and
 * line separator is shown as `\xNN` / `\uNNNN` instead (CONTRACT §7); a missing value is `none`.
 */
export function printable(line: string | null | undefined): string {
  if (line === null || line === undefined) return "none";
  return line.replace(UNPRINTABLE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

export type OpsDeps = { sql: Sql; out: Out };

export type OpsSpec<C> = {
  program: string;
  /** The subcommand line, for the one-line error message (`notification dlq list: ...`). */
  label: string;
  schema: string;
  loadConfig: () => C;
  databaseUrl: (config: C) => string;
};

/**
 * Runs `body` with the configuration and a PostgreSQL connection; returns its exit code, 1 when it throws (the error
 * printed on one line) and 78 when the configuration is invalid.
 */
export function withOpsDatabase<C>(
  spec: OpsSpec<C>,
  body: (ctx: OpsDeps & { config: C }) => Promise<number>,
): Promise<number> {
  return withConfig(spec.program, spec.loadConfig, async (config) => {
    const sql = createSql({
      url: spec.databaseUrl(config),
      schema: spec.schema,
      max: 1,
      applicationName: `${spec.program}-ops`,
    });
    try {
      return await body({ sql, config, out: (line) => console.log(printable(line)) });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      console.error(printable(`${spec.program} ${spec.label}: ${message}`));
      return 1;
    } finally {
      await sql.end({ timeout: 5 });
    }
  });
}
