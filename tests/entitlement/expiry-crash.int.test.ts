// Two Entitlement replicas run the scheduler while 600 expiries fall due; one is killed with SIGKILL in the middle.
// It is killed while it holds claims; they are taken over when their lease runs out, and every entitlement is revoked
// exactly once.
import { expect, setDefaultTimeout, test } from "bun:test";
import { killHoldingClaims, serveSchedulerReplica } from "../support/scheduler-replica.ts";
import { waitUntil } from "../support/wait.ts";
import { useApi } from "./api.helpers.ts";
import { expiryCounts, expiryProblems, grantExpiring } from "./expiry.helpers.ts";

setDefaultTimeout(180_000);

const TOTAL = 600;

const f = useApi("ent_expiry_crash");

const serve = (hostname: string, slow: boolean) => serveSchedulerReplica(f.db.url, hostname, slow);

test("kill -9 of one of two replicas while expiries are due: each entitlement revoked exactly once", async () => {
  await grantExpiring(f.app, { prefix: "crash", users: 6, items: TOTAL / 6, expiresAt: new Date(Date.now() + 3_000) });
  const doomed = serve("doomed", true);
  const survivor = serve("survivor", true);
  try {
    const held = await killHoldingClaims(doomed, { sql: f.sql, table: "entitlement_expiries", hostname: "doomed" });
    expect(held, "the replica died holding claims").toBeGreaterThan(0);
    expect((await expiryCounts(f.sql, "crash")).revoked, "the kill came before every expiry ran").toBeLessThan(TOTAL);
    await waitUntil(
      async () => (await expiryCounts(f.sql, "crash")).done === TOTAL,
      "every expiry DONE on the surviving replica",
      120_000,
    );
  } finally {
    survivor.kill("SIGTERM");
    await survivor.exited;
  }
  expect(await expiryCounts(f.sql, "crash")).toEqual({ active: 0, revoked: TOTAL, done: TOTAL });
  expect(await expiryProblems(f.sql, "crash")).toEqual([]);
});
