// The operator commands of both executables, as an operator meets them at the shell: every subcommand answers --help
// and -h with its usage on stdout (exit 0), a usage error says exactly what was wrong before the usage (exit 2), and
// without DATABASE_URL an operator command refuses in one line (exit 78) instead of trying the server's default
// database. Nothing here reaches a server: each case is refused before a connection is opened. (`bulk` reads its file
// first: its refusal without DATABASE_URL is in bulk-database-url.int.test.ts.)
import { describe, expect, spyOn, test } from "bun:test";
import { entitlementOpsSubcommands } from "../../src/entitlement/ops/subcommands.ts";
import { tokenSubcommand } from "../../src/entitlement/ops/tokens.ts";
import { notificationOpsSubcommands } from "../../src/notification/ops/subcommands.ts";
import type { Subcommand } from "../../src/shared/cli.ts";
import { withoutArgs } from "../../src/shared/cli-args.ts";

type Printed = { code: number; stdout: string[]; stderr: string[] };

async function printed(run: () => Promise<number>): Promise<Printed> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const log = spyOn(console, "log").mockImplementation((...args: unknown[]) => void stdout.push(args.join(" ")));
  const error = spyOn(console, "error").mockImplementation((...args: unknown[]) => void stderr.push(args.join(" ")));
  try {
    return { code: await run(), stdout, stderr };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

/** A database no test may reach: a command that opened it would fail with 1, not with the code asserted. */
const NOWHERE = { DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" };

const all = (env: Record<string, string | undefined>): [string, Subcommand][] => [
  ...entitlementOpsSubcommands(env).map((c) => [`entitlement ${c.name}`, c] as [string, Subcommand]),
  ["entitlement token", tokenSubcommand()],
  ["entitlement serve", { name: "serve", summary: "", run: withoutArgs("entitlement", "serve", async () => 1) }],
  ...notificationOpsSubcommands(env).map((c) => [`notification ${c.name}`, c] as [string, Subcommand]),
];

const find = (label: string): Subcommand => {
  const found = all(NOWHERE).find(([name]) => name === label);
  if (!found) throw new Error(`no subcommand ${label}`);
  return found[1];
};

describe("--help and -h", () => {
  test("every subcommand prints its usage to stdout and exits 0, wherever the flag stands", async () => {
    for (const [label, subcommand] of all(NOWHERE)) {
      for (const args of [["--help"], ["-h"], [subcommand.name === "bulk" ? "apply" : "list", "--help"]]) {
        const r = await printed(() => subcommand.run(args));
        expect(r.code, `${label} ${args.join(" ")} exits 0`).toBe(0);
        expect(r.stdout.join("\n"), `${label} ${args.join(" ")} prints its usage to stdout`).toStartWith("usage: ");
        expect(r.stderr, `${label} ${args.join(" ")} prints nothing to stderr`).toEqual([]);
      }
    }
  });
});

describe("usage errors say what was wrong", () => {
  const cases: [string, string[], string][] = [
    ["entitlement outbox", [], "missing command: expected stats or requeue"],
    ["entitlement outbox", ["purge"], "unknown command 'purge': expected stats or requeue"],
    ["entitlement outbox", ["--bogus"], "unknown flag '--bogus': expected stats or requeue"],
    ["entitlement outbox", ["stats", "extra"], "unexpected argument 'extra'"],
    ["entitlement outbox", ["requeue"], "missing <event_id> (or --failed)"],
    ["entitlement outbox", ["requeue", "abc"], "<event_id> 'abc' is not a UUID"],
    ["entitlement outbox", ["requeue", "--failed", "--all"], "unknown flag '--all': expected --failed"],
    ["entitlement points", ["requeue", "x1"], "<reservation_id> 'x1' is not a UUID"],
    ["entitlement partitions", ["detach"], "missing <partition>"],
    ["entitlement partitions", ["drop", "a;b"], "<partition> 'a;b' is not a month partition's name"],
    ["entitlement bulk", ["apply"], "missing FILE.csv"],
    ["entitlement bulk", ["apply", "f.csv", "--result"], "flag --result needs a value"],
    ["entitlement bulk", ["apply", "f.csv", "--dry-run", "--dry-run"], "flag --dry-run given twice"],
    ["entitlement bulk", ["apply", "f.csv", "--dryrun"], "unknown flag '--dryrun': expected --dry-run or --result"],
    ["entitlement token", ["new", "Bad Name", "read"], "NAME 'Bad Name' must be 1 to 64 characters"],
    ["entitlement token", ["new", "payments"], "missing SCOPES"],
    ["entitlement serve", ["--bogus"], "unknown flag '--bogus'"],
    ["notification dlq", ["list", "--limit"], "flag --limit needs a value"],
    ["notification dlq", ["list", "--limit", "0"], "--limit '0' must be a whole number from 1 to 999999"],
    ["notification dlq", ["list", "-n", "5"], "unknown flag '-n': expected --limit"],
    ["notification dlq", ["requeue", "x"], "<notification_id> 'x' is not a UUID"],
    ["notification nats-dlq", ["replay"], "missing <stream_seq>"],
    ["notification nats-dlq", ["replay", "0"], "<stream_seq> '0' must be a whole number from 1 to"],
    ["notification nats-dlq", ["replay", "1", "--stream", "bad name"], "--stream 'bad name' is not a stream name"],
    ["notification endpoints", ["frobnicate"], "unknown command 'frobnicate': expected list, disable, enable,"],
    ["notification endpoints", ["replay", crypto.randomUUID()], "missing --since <ISO-8601>"],
    ["notification endpoints", ["enable", "not-a-uuid"], "<endpoint_id> 'not-a-uuid' is not a UUID"],
  ];

  test("each names the problem on its first line, then the usage, and exits 2", async () => {
    for (const [label, args, problem] of cases) {
      const r = await printed(() => find(label).run(args));
      const [first, ...rest] = r.stderr.join("\n").split("\n");
      expect(r.code, `${label} ${args.join(" ")} is a usage error`).toBe(2);
      expect(first, `${label} ${args.join(" ")} says what was wrong`).toStartWith(`${label}: ${problem}`);
      expect(rest.join("\n"), `${label} ${args.join(" ")} then prints the usage`).toStartWith("usage: ");
    }
  });

  test("an argument is shown with its control characters escaped", async () => {
    const r = await printed(() => find("entitlement outbox").run(["requeue", "\u001b[2Jx"]));
    expect(r.stderr.join("\n")).toContain("'\\x1b[2Jx' is not a UUID");
  });
});

describe("without DATABASE_URL", () => {
  const commands: [string, string[]][] = [
    ["outbox", ["stats"]],
    ["points", ["stats"]],
    ["partitions", ["list"]],
    ["dlq", ["list"]],
    ["nats-dlq", ["list"]],
    ["endpoints", ["list"]],
  ];

  test("every operator command refuses in one line naming DATABASE_URL and exits 78", async () => {
    for (const env of [{}, { DATABASE_URL: "" }, { PGHOST: "127.0.0.1", PGDATABASE: "postgres" }]) {
      const subcommands = [...entitlementOpsSubcommands(env), ...notificationOpsSubcommands(env)];
      for (const [name, args] of commands) {
        const r = await printed(() => (subcommands.find((c) => c.name === name) as Subcommand).run(args));
        expect(r.code, `${name} ${args.join(" ")} without DATABASE_URL: ${r.stderr.join("\n")}`).toBe(78);
        expect(r.stderr.length, `${name}: one line`).toBe(1);
        expect(r.stderr[0]).toMatch(/^(entitlement|notification): configuration: DATABASE_URL is not set: /);
        expect(r.stdout).toEqual([]);
      }
    }
  });

  test("other configuration problems are reported with it", async () => {
    const outbox = entitlementOpsSubcommands({ DATABASE_POOL_MAX: "zero" }).find((c) => c.name === "outbox");
    const r = await printed(() => (outbox as Subcommand).run(["stats"]));
    expect(r.code).toBe(78);
    expect(r.stderr.join("\n")).toContain("DATABASE_URL is not set");
    expect(r.stderr.join("\n")).toContain("DATABASE_POOL_MAX");
  });
});
