// Rows the tests write directly with SQL are announced as another replica's commit would announce them: by the
// debounced NOTIFY after commit (src/entitlement/work/wakeups.ts), which the relays and schedulers under test hear.
import { createWakeups, type Wakeups } from "../../src/entitlement/work/wakeups.ts";
import type { Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";

const replicas = new WeakMap<Sql, Wakeups>();

/** The wake-ups of a replica that is not under test, writing through `sql`. */
export function otherReplica(sql: Sql): Wakeups {
  let wakeups = replicas.get(sql);
  if (!wakeups) {
    wakeups = createWakeups({ sql, log: silentLogger, retryMs: 1_000 });
    replicas.set(sql, wakeups);
  }
  return wakeups;
}
