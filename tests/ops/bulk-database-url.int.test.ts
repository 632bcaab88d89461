// `entitlement bulk apply` reads its file first (a missing one is its own error), then, like every operator command,
// refuses without DATABASE_URL in one line (exit 78) instead of trying the server's default database.
import { afterAll, expect, spyOn, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bulkSubcommand } from "../../src/entitlement/ops/bulk.ts";

const dir = mkdtempSync(join(tmpdir(), "bulk-database-url-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a readable bulk file without DATABASE_URL: one line naming DATABASE_URL, exit 78, nothing printed", async () => {
  const file = join(dir, "grants.csv");
  writeFileSync(file, "user_id,stock_keeping_unit,action,reason\nu1,sword,grant,outage\n");
  for (const env of [{}, { DATABASE_URL: " " }]) {
    const stdout: string[] = [];
    const stderr: string[] = [];
    const log = spyOn(console, "log").mockImplementation((...a: unknown[]) => void stdout.push(a.join(" ")));
    const error = spyOn(console, "error").mockImplementation((...a: unknown[]) => void stderr.push(a.join(" ")));
    try {
      expect(await bulkSubcommand(env).run(["apply", file, "--dry-run"])).toBe(78);
    } finally {
      log.mockRestore();
      error.mockRestore();
    }
    expect(stderr).toHaveLength(1);
    expect(stderr[0]).toStartWith("entitlement: configuration: DATABASE_URL is not set: ");
    expect(stdout).toEqual([]);
  }
});
