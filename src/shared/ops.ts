// What every operator subcommand opens: the service's configuration from the environment and one PostgreSQL connection
// of its own. Each subcommand prints one human-readable line per fact or change and returns its exit code.
import { withConfig } from "./cli.ts";
import { ConfigError } from "./config.ts";
import { createSql, type Sql } from "./db.ts";

export type Out = (line: string) => void;

/**
 * C0, DEL and C1 controls, the line and paragraph separators, and the invisible format characters that reorder or
 * hide text: the bidi marks, embeddings, overrides and isolates (U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069),
 * the zero-width ones (U+200B–U+200D, U+2060–U+2064, U+FEFF) and the interlinear annotations (U+FFF9–U+FFFB). A user
 * id holding U+202E would otherwise print the rest of its line reversed.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this expression's purpose
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/g;

/**
 * A line as it may reach an operator's terminal: what the subcommands print comes partly from stored data (ids, error
 * texts), and an ESC or a newline there could rewrite the screen or forge lines, a bidi override reverse them. Every
 * UNPRINTABLE character is shown as `\xNN` / `\uNNNN` instead (docs/operations.md); a missing value is `none`.
 */
export function printable(line: string | null | undefined): string {
  if (line === null || line === undefined) return "none";
  return line.replace(UNPRINTABLE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

export type OpsDeps = { sql: Sql; out: Out };

/**
 * An operator command acts on one deployment's data, so it never takes DATABASE_URL's default (the local server's
 * `postgres` database, where the service's tables are missing and every command would fail as if the install were
 * broken). PostgreSQL's own PG* variables are not read: the URL always names the server and the database.
 */
const MISSING_DATABASE_URL =
  "DATABASE_URL is not set: operator commands need the URL of the service's database " +
  "(postgres://user@host:5432/dbname) and take no default";

/** `load`'s configuration, or a ConfigError that also names a missing DATABASE_URL. */
export function loadOperatorConfig<C>(env: Record<string, string | undefined>, load: () => C): C {
  const missing = env.DATABASE_URL?.trim() ? [] : [MISSING_DATABASE_URL];
  let config: C;
  try {
    config = load();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // A blank DATABASE_URL is reported once, as not set.
    const others = missing.length > 0 ? error.problems.filter((p) => !p.startsWith("DATABASE_URL=")) : error.problems;
    throw new ConfigError([...missing, ...others]);
  }
  if (missing.length > 0) throw new ConfigError(missing);
  return config;
}

export type OpsSpec<C> = {
  program: string;
  env: Record<string, string | undefined>;
  /** The subcommand line, for the one-line error message (`notification dlq list: ...`). */
  label: string;
  schema: string;
  loadConfig: () => C;
  databaseUrl: (config: C) => string;
};

/**
 * Runs `body` with the configuration and a PostgreSQL connection; returns its exit code, 1 when it throws (the error
 * printed on one line) and 78 when the configuration is invalid or DATABASE_URL is not set.
 */
export function withOpsDatabase<C>(
  spec: OpsSpec<C>,
  body: (ctx: OpsDeps & { config: C }) => Promise<number>,
): Promise<number> {
  return withConfig(
    spec.program,
    () => loadOperatorConfig(spec.env, spec.loadConfig),
    async (config) => {
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
    },
  );
}
