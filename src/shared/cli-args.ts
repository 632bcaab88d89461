// A subcommand's arguments: each parser throws a UsageError that says exactly what was wrong (a missing or unknown
// operation, an unknown, repeated or value-less flag, a bad value), and `checkedRun` prints it with the usage and exits
// 2 before anything is opened. `--help` / `-h` print the usage to stdout and exit 0.
import { EXIT_USAGE, type Subcommand } from "./cli.ts";
import { isUuid } from "./ids.ts";
import { printable } from "./ops.ts";

/** What was wrong with a subcommand's arguments, in one line (`unknown flag '--bogus'`); its exit code is 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

const HELP = new Set(["--help", "-h"]);

/** An argument as a usage error shows it: quoted, with control characters escaped. */
export const quoted = (arg: string): string => `'${printable(arg)}'`;

const oneOf = (choices: readonly string[]): string =>
  choices.length === 1 ? (choices[0] as string) : `${choices.slice(0, -1).join(", ")} or ${choices.at(-1)}`;

/**
 * A subcommand's run with its argument check in front: `--help` or `-h` anywhere prints `usage` to stdout and exits 0;
 * a UsageError from `parse` prints `<program> <name>: <what was wrong>` and then the usage to stderr and exits 2.
 */
export function checkedRun<A>(
  spec: { program: string; name: string; usage: string; parse: (args: string[]) => A },
  run: (parsed: A, args: string[]) => Promise<number>,
): Subcommand["run"] {
  return async (args) => {
    if (args.some((arg) => HELP.has(arg))) {
      console.log(spec.usage);
      return 0;
    }
    let parsed: A;
    try {
      parsed = spec.parse(args);
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      console.error(`${spec.program} ${spec.name}: ${error.message}\n${spec.usage}`);
      return EXIT_USAGE;
    }
    return run(parsed, args);
  };
}

/** Wraps a subcommand that takes no arguments: anything after it is a usage error (exit 2). */
export function withoutArgs(program: string, name: string, run: () => Promise<number>): Subcommand["run"] {
  return checkedRun({ program, name, usage: `usage: ${program} ${name}`, parse: noArguments }, run);
}

/** Nothing (more) may follow. */
export function noArguments(args: readonly string[]): void {
  const [extra] = args;
  if (extra === undefined) return;
  throw new UsageError(`${extra.startsWith("-") ? "unknown flag" : "unexpected argument"} ${quoted(extra)}`);
}

/** The operation, the first argument, one of `ops`. */
export function operation<T extends string>(arg: string | undefined, ops: readonly T[]): T {
  if (arg === undefined) throw new UsageError(`missing command: expected ${oneOf(ops)}`);
  if (ops.includes(arg as T)) return arg as T;
  const kind = arg.startsWith("-") ? "flag" : "command";
  throw new UsageError(`unknown ${kind} ${quoted(arg)}: expected ${oneOf(ops)}`);
}

/** The flags a subcommand takes: a switch stands alone, a value flag takes the next argument. */
export type FlagSpec = Record<string, "switch" | "value">;
export type Flags<F extends FlagSpec> = { [K in keyof F]?: F[K] extends "value" ? string : true };

/** Splits `args` into positionals and the flags of `spec`; an unknown or repeated flag, or one without its value, throws. */
export function splitFlags<F extends FlagSpec>(
  args: readonly string[],
  spec: F,
): { positional: string[]; flags: Flags<F> } {
  const positional: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const kind = spec[arg];
    if (kind === undefined) {
      if (arg.startsWith("-"))
        throw new UsageError(`unknown flag ${quoted(arg)}: expected ${oneOf(Object.keys(spec))}`);
      positional.push(arg);
    } else if (flags[arg] !== undefined) {
      throw new UsageError(`flag ${arg} given twice`);
    } else if (kind === "switch") {
      flags[arg] = true;
    } else {
      const value = args[++i];
      if (value === undefined || value.startsWith("--")) throw new UsageError(`flag ${arg} needs a value`);
      flags[arg] = value;
    }
  }
  return { positional, flags: flags as Flags<F> };
}

/** Exactly the positionals `names` (e.g. `<event_id>`): a missing one or an extra one throws. */
export function positionals(args: readonly string[], names: readonly string[]): string[] {
  const missing = names[args.length];
  if (missing !== undefined) throw new UsageError(`missing ${missing}`);
  noArguments(args.slice(names.length));
  return [...args];
}

/** A UUID argument, lower-cased. */
export function uuidArgument(name: string, value: string): string {
  if (!isUuid(value)) throw new UsageError(`${name} ${quoted(value)} is not a UUID`);
  return value.toLowerCase();
}

/** A whole number from `min` to `max` (no sign, no exponent, no leading zero). */
export function wholeNumber(name: string, value: string, min: number, max: number): number {
  const n = /^(0|[1-9]\d{0,15})$/.test(value) ? Number(value) : Number.NaN;
  if (n >= min && n <= max) return n;
  throw new UsageError(`${name} ${quoted(value)} must be a whole number from ${min} to ${max}`);
}
