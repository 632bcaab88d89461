// Subcommand dispatch shared by both executables: none means `serve`; `--help` lists them; `--version`
// prints one line (service, version, commit, Bun); an unknown subcommand or flag exits 2 with a usage line; invalid
// configuration exits 78. A subcommand's own arguments are checked by cli-args.ts.
import { ConfigError, EXIT_CONFIG } from "./config.ts";

export const EXIT_USAGE = 2;

export type Subcommand = {
  name: string;
  summary: string;
  /** Receives the arguments after the subcommand; returns the exit code. */
  run: (args: string[]) => Promise<number>;
};

export function usage(program: string, subcommands: Subcommand[]): string {
  const width = Math.max(...subcommands.map((c) => c.name.length));
  return [
    `usage: ${program} [command] [args]   (no command: serve; --version: what is built)`,
    "",
    "commands:",
    ...subcommands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
  ].join("\n");
}

export async function dispatch(
  program: string,
  argv: string[],
  subcommands: Subcommand[],
  version: string,
): Promise<number> {
  const [first, ...rest] = argv;
  if (first === "--help" || first === "-h" || first === "help") {
    console.log(usage(program, subcommands));
    return 0;
  }
  if (first === "--version" && rest.length === 0) {
    console.log(version);
    return 0;
  }
  const name = first ?? "serve";
  const subcommand = subcommands.find((c) => c.name === name);
  if (!subcommand) {
    console.error(`${program}: unknown command or flag '${name}'\n${usage(program, subcommands)}`);
    return EXIT_USAGE;
  }
  return subcommand.run(rest);
}

/**
 * Loads the configuration a subcommand needs, then runs it. Invalid configuration prints every problem on a line of its
 * own (`<program>: configuration: <problem>`) and returns 78 without running `body`. Every subcommand (serve, migrate,
 * healthcheck, the operator subcommands) loads its configuration through here.
 */
export async function withConfig<C>(
  program: string,
  load: () => C,
  body: (config: C) => Promise<number>,
): Promise<number> {
  let config: C;
  try {
    config = load();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const problem of error.problems) console.error(`${program}: configuration: ${problem}`);
    return EXIT_CONFIG;
  }
  return body(config);
}
