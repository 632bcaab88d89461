// A bulk file from the shell: `entitlement bulk apply` (the executable's own command, as an operator runs it) on a file
// of `--rows` rows (default 10,000: grants of 1 to 3 items to distinct users, so both single grants and bundles run),
// timed for the first apply and for applying the same file again. Targets: at most 10 s, and at most 5 s again.
//   bun tests/bench/bulk-apply.ts                     10,000 rows on a cluster of its own
//   bun tests/bench/bulk-apply.ts --rows 500          a first look
//   bun tests/bench/bulk-apply.ts --url postgres://…  on that server, in a database of its own (dropped after)
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { round } from "./stats.ts";
import { openBenchDatabase } from "./support-db.ts";

const { values } = parseArgs({ options: { rows: { type: "string", default: "10000" }, url: { type: "string" } } });
const ROWS = Number(values.rows);
const MAIN = new URL("../../src/entitlement/main.ts", import.meta.url).pathname;

function bulkFile(): string {
  const lines = ["user_id,stock_keeping_unit,action,reason"];
  for (let i = 0; lines.length <= ROWS; i++) {
    const items = 1 + (i % 3);
    for (let k = 0; k < items && lines.length <= ROWS; k++)
      lines.push(`bench-user-${i},item-${k},grant,outage compensation`);
  }
  return `${lines.join("\r\n")}\r\n`;
}

async function applyOnce(
  env: Record<string, string | undefined>,
  path: string,
): Promise<{ seconds: number; summary: string }> {
  const started = performance.now();
  const proc = Bun.spawn([process.execPath, MAIN, "bulk", "apply", path], { env, stdout: "pipe", stderr: "inherit" });
  const [code, out] = await Promise.all([proc.exited, new Response(proc.stdout).text()]);
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`bulk apply exited ${code}:\n${out}`);
  return { seconds, summary: out.trim().split("\n").at(-1) ?? "" };
}

const db = await openBenchDatabase(values.url, "bulk");
const dir = mkdtempSync(join(tmpdir(), "bench-bulk-"));
try {
  const path = join(dir, "compensation.csv");
  writeFileSync(path, bulkFile());
  const env = {
    ...process.env,
    DATABASE_URL: db.url,
    NATS_URL: process.env.NATS_URL ?? "nats://127.0.0.1:4222",
    LOG_LEVEL: "silent",
  };
  const first = await applyOnce(env, path);
  const again = await applyOnce(env, path);
  console.log(`bulk apply, ${ROWS} rows (process start, preview and result file included):`);
  console.log(`  first apply   ${round(first.seconds, 2)} s   (target 10 s)   ${first.summary}`);
  console.log(`  applied again ${round(again.seconds, 2)} s   (target 5 s)    ${again.summary}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
  await db.stop();
}
