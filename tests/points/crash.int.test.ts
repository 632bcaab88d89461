// kill -9 of the Entitlement process in the middle of executing a backlog of due reservations, then a restart (with
// another worker id, as a replacement replica): every reservation ends DONE exactly once, the balances are exact,
// and the dead process's claims are taken over once their lease runs out.
import { expect, setDefaultTimeout, test } from "bun:test";
import { useTestDatabase } from "../support/infra.ts";
import { killHoldingClaims, serveSchedulerReplica } from "../support/scheduler-replica.ts";
import { waitUntil } from "../support/wait.ts";
import { ledgerProblems, POINTS_DATABASE, reserve, statusCounts } from "./helpers.ts";

setDefaultTimeout(180_000);

const f = useTestDatabase("crash", POINTS_DATABASE);
const TOTAL = 3_000;

const serve = (hostname: string, slow = false) => serveSchedulerReplica(f.db.url, hostname, slow);

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
  const held = await killHoldingClaims(first, { sql: f.sql, table: "point_reservations", hostname: "first" });
  expect(held, "the process died holding claims").toBeGreaterThan(0);
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
