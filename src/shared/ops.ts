// What every operator command opens: the service's configuration from the environment and one PostgreSQL connection
// of its own. Each command prints one human-readable line per fact or change and returns its exit code.
import { withConfig } from "./cli.ts";
import { createSql, type Sql } from "./db.ts";

export type Out = (line: string) => void;
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
      return await body({ sql, config, out: (line) => console.log(line) });
    } catch (error) {
      console.error(`${spec.program} ${spec.label}: ${error instanceof Error ? error.message : String(error)}`);
      return 1;
    } finally {
      await sql.end({ timeout: 5 });
    }
  });
}

/**
 * Stored text made safe for a terminal (CONTRACT §7): every control character becomes `\xNN`, so an error message or
 * id from the database can neither move the cursor nor forge another output line.
 */
export function printable(text: string | null | undefined): string {
  if (text === null || text === undefined) return "none";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: replacing control characters is this expression's purpose
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}
