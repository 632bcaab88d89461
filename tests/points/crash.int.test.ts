// kill -9 of the Entitlement process in the middle of executing a backlog of due reservations, then a restart (with
// another worker id, as a replacement replica): every reservation ends DONE exactly once, the balances are exact,
// and the dead process's claims are taken over once their lease runs out.
import { expect, setDefaultTimeout, test } from "bun:test";
import { waitUntil } from "../support/wait.ts";
import { ledgerProblems, reserve, statusCounts, usePointsDatabase } from "./helpers.ts";

setDefaultTimeout(180_000);

const MAIN = new URL("../../src/entitlement/main.ts", import.meta.url).pathname;
const f = usePointsDatabase("crash");
const TOTAL = 3_000;

/** `slow`: small batches one at a time, so the kill surely lands while the backlog is being executed. */
function serve(hostname: string, slow = false): Bun.Subprocess {
  return Bun.spawn(["bun", MAIN, "serve"], {
    env: {
      PATH: process.env.PATH ?? "",
      DATABASE_URL: f.db.url,
      HOST: "127.0.0.1",
      PORT: "0",
      HOSTNAME: hostname,
      LOG_LEVEL: "warn",
      NATS_ENABLED: "false",
      ENTITLEMENT_AUTH_DISABLED: "true",
      ENTITLEMENT_RETENTION_ENABLED: "false",
      ENTITLEMENT_SCHEDULER_LEASE: "2s",
      ENTITLEMENT_SCHEDULER_BATCH_SIZE: slow ? "10" : "100",
      ENTITLEMENT_SCHEDULER_CONCURRENCY: slow ? "1" : "4",
    },
    stdout: "ignore",
    stderr: "inherit",
  });
}

test("kill -9 mid-execution, then restart: each reservation DONE exactly once", async () => {
  const at = new Date(Date.now() + 2_000);
  for (let i = 0; i < TOTAL; i += 500) {
    await Promise.all(
      Array.from({ length: 500 }, (_, j) =>
        reserve(f.sql, { userId: `u${(i + j) % 50}`, amount: 1 + j, executeAt: at }),
      ),
    );
  }
  const first = serve("first", true);
  try {
    await waitUntil(async () => ((await statusCounts(f.sql)).DONE ?? 0) >= 200, "the first process to be executing");
  } finally {
    first.kill("SIGKILL");
    await first.exited;
  }
  const afterKill = await statusCounts(f.sql);
  expect(afterKill.DONE ?? 0, "the kill came before the backlog was done").toBeLessThan(TOTAL);

  const second = serve("second");
  try {
    await waitUntil(
      async () => (await statusCounts(f.sql)).DONE === TOTAL,
      "every reservation DONE after restart",
      120_000,
    );
  } finally {
    second.kill("SIGTERM");
    await second.exited;
  }
  expect(await ledgerProblems(f.sql)).toEqual([]);
  const [sum] = await f.sql<{ total: number }[]>`select sum(balance)::float8 as total from point_balances`;
  const expected = Array.from({ length: TOTAL }, (_, i) => 1 + (i % 500)).reduce((a, b) => a + b, 0);
  expect(sum?.total, "the balances hold every reservation exactly once").toBe(expected);
});
