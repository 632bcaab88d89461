// The compiled executables run on their own: copied into an empty folder, with no Bun on PATH and no
// node_modules or source tree anywhere near, they answer --help, refuse bad input with the documented exit codes and
// apply their embedded migrations to a fresh, empty database.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import pkg from "../../package.json" with { type: "json" };
import { functions } from "../../src/entitlement/migrations.ts";
import type { ServiceName } from "../../tools/build.ts";
import { runCommand } from "../support/process.ts";
import { builtBinary, emptyDatabase, repoRoot } from "./support.ts";

const BUILD_TIMEOUT = 240_000;

const run = (binary: string, args: string[], env: Record<string, string>, cwd: string) =>
  runCommand([binary, ...args], { cwd, env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LOG_LEVEL: "warn", ...env } });

function describeBinary(name: ServiceName, badVariable: string, operatorCommands: string[][]) {
  describe(`dist/${name}`, () => {
    let dir: string;
    let binary: string;
    let database: Awaited<ReturnType<typeof emptyDatabase>> | undefined;
    let databaseUrl: string;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), `ship-${name}-`));
      binary = join(dir, name);
      copyFileSync(await builtBinary(name), binary);
      database = await emptyDatabase(`ship_${name}`);
      databaseUrl = database.url;
    }, BUILD_TIMEOUT);

    afterAll(async () => {
      await database?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test("--help exits 0 and lists serve, migrate and the operator commands", async () => {
      const r = await run(binary, ["--help"], {}, dir);
      expect(r.code).toBe(0);
      for (const command of ["serve", "migrate", ...operatorCommands.map((c) => c[0] as string)]) {
        expect(r.stdout).toMatch(new RegExp(`^  ${command} `, "m"));
      }
    });

    test("--version prints service, project version, embedded git commit and Bun version on one line", async () => {
      const r = await run(binary, ["--version"], {}, dir);
      expect(r.code).toBe(0);
      const head = Bun.spawnSync(["git", "rev-parse", "--short=12", "HEAD"], { cwd: repoRoot })
        .stdout.toString()
        .trim();
      expect(r.stdout).toBe(
        `${name} ${pkg.version} (commit ${head}${r.stdout.includes("-dirty") ? "-dirty" : ""}, bun ${Bun.version})\n`,
      );
    });

    test("an unknown subcommand exits 2 with a usage line", async () => {
      const r = await run(binary, ["no-such-command"], {}, dir);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("usage:");
    });

    test("serve and migrate take no arguments: an extra one exits 2 before anything runs", async () => {
      for (const command of ["serve", "migrate"]) {
        const r = await run(binary, [command, "--bogus"], { DATABASE_URL: databaseUrl }, dir);
        expect(r.code, `${name} ${command} --bogus is a usage error`).toBe(2);
        expect(r.stderr).toContain("usage:");
      }
    });

    test("invalid configuration exits 78 naming the variable", async () => {
      const r = await run(binary, ["migrate"], { [badVariable]: "-1", DATABASE_URL: databaseUrl }, dir);
      expect(r.code).toBe(78);
      expect(r.stderr).toContain(badVariable);
    });

    test("migrate applies the embedded migrations to an empty database, again is a no-op; operator commands run", async () => {
      const first = await run(binary, ["migrate"], { DATABASE_URL: databaseUrl }, dir);
      expect(first.code, first.stderr + first.stdout).toBe(0);
      const db = postgres(databaseUrl, { max: 1, onnotice: () => {} });
      try {
        const applied = await db.unsafe(`select name from "${name}".schema_migrations order by version`);
        expect(applied.map((r) => r.name)).toContain("001_init.sql");
        if (name === "entitlement") {
          const recorded = await db.unsafe(`select name from entitlement.schema_functions order by name collate "C"`);
          expect(
            recorded.map((r) => r.name),
            "every embedded function file applied",
          ).toEqual(functions.map((f) => f.name));
        }
      } finally {
        await db.end();
      }
      const second = await run(binary, ["migrate"], { DATABASE_URL: databaseUrl }, dir);
      expect(second.code, second.stderr + second.stdout).toBe(0);

      for (const args of operatorCommands) {
        const r = await run(binary, args, { DATABASE_URL: databaseUrl }, dir);
        expect(r.code, `${name} ${args.join(" ")}: ${r.stderr}`).toBe(0);
        const usage = await run(binary, [args[0] as string, "--bogus"], { DATABASE_URL: databaseUrl }, dir);
        expect(usage.code, `${name} ${args[0]} --bogus is a usage error`).toBe(2);
      }
      // Eight process starts: ~3 s on an idle machine, more than the default 5 s on a loaded one.
    }, 30_000);
  });
}

describeBinary("entitlement", "ENTITLEMENT_OUTBOX_BATCH_SIZE", [
  ["outbox", "stats"],
  ["outbox", "requeue", "--failed"],
  ["points", "stats"],
  ["points", "requeue", "--failed"],
]);
describeBinary("notification", "NOTIFICATION_DELIVERY_BATCH_SIZE", [
  ["dlq", "list"],
  ["nats-dlq", "list"],
  ["endpoints", "list"],
]);
