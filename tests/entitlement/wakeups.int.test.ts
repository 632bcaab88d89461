// How the workers hear of new work: this process's listeners at once, in memory; the other replicas by one NOTIFY per
// debounce window, sent after commit on the pool; and no write transaction of the service sends a NOTIFY.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { Glob } from "bun";
import { createWakeups, OUTBOX_CHANNEL } from "../../src/entitlement/work/wakeups.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { useTestDatabase } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";

// Ending a pool that held a LISTEN connection may take its whole 5 s timeout on a loaded machine.
setDefaultTimeout(30_000);

const f = useTestDatabase("ent_wakeups", { service: "entitlement", poolMax: 4 });

describe("wake-ups", () => {
  test("a commit wakes this process's listeners at once and tells the others with one NOTIFY per window", async () => {
    const stop = new AbortController();
    const a = createWakeups({ sql: f.sql, log: silentLogger, retryMs: 1_000, debounceMs: 50 });
    const b = createWakeups({ sql: f.sql, log: silentLogger, retryMs: 1_000 });
    const heard = { aEvents: 0, bEvents: 0, bDue: [] as number[] };
    const notified: string[] = [];
    const listening = await f.sql.listen(OUTBOX_CHANNEL, (payload) => notified.push(payload));
    const stops = [
      a.onEvents(() => heard.aEvents++, stop.signal),
      b.onEvents(() => heard.bEvents++, stop.signal),
      b.onDue((at) => Number.isFinite(at) && heard.bDue.push(at), stop.signal),
    ];
    try {
      await Bun.sleep(300); // let the LISTENs start (each calls its listener once, to catch up)
      const before = { a: heard.aEvents, b: heard.bEvents };
      const due = new Date(Date.now() + 60_000);
      for (let i = 0; i < 20; i++) a.committed({ events: true, dueAt: new Date(due.getTime() + i) });
      expect(heard.aEvents - before.a, "this process's relay is woken in memory, once per commit").toBe(20);
      await waitUntil(async () => heard.bEvents > before.b && heard.bDue.length > 0, "the other replica hears", 5_000);
      await Bun.sleep(200);
      expect(notified, "twenty commits in one window: one NOTIFY").toHaveLength(1);
      expect(heard.bEvents - before.b, "the other replica is woken once for the window").toBe(1);
      expect(heard.bDue, "with the earliest due time of the window").toEqual([due.getTime()]);
      expect(heard.aEvents - before.a, "a replica ignores its own NOTIFY").toBe(20);
    } finally {
      stop.abort();
      await Promise.all(stops.map((s) => s()));
      await listening.unlisten();
    }
  });
});

describe("nothing global on a commit", () => {
  test("no trigger or function of the schema sends a NOTIFY", async () => {
    const rows = await f.sql<{ name: string }[]>`
      select p.proname as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'entitlement' and p.prosrc ~* '(pg_notify|\\mnotify\\M)'
      union all
      select t.tgname from pg_trigger t join pg_class c on c.oid = t.tgrelid
      join pg_namespace n on n.oid = c.relnamespace join pg_proc p on p.oid = t.tgfoid
      where n.nspname = 'entitlement' and not t.tgisinternal and p.prosrc ~* '(pg_notify|\\mnotify\\M)'`;
    expect(
      rows.map((r) => r.name),
      "a NOTIFY in a write transaction serialises every commit",
    ).toEqual([]);
  });

  test("the service sends NOTIFY only from the after-commit signal and the operators' requeue commands", async () => {
    const allowed = new Set(["work/wakeups.ts", "ops/queries.ts", "ops/points-queries.ts"]);
    const offenders: string[] = [];
    for await (const file of new Glob("**/*.ts").scan("src/entitlement")) {
      const text = await Bun.file(`src/entitlement/${file}`).text();
      if (/pg_notify|\bnotify\s/i.test(text.replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, "")) && !allowed.has(file)) {
        offenders.push(file);
      }
    }
    expect(offenders, "a NOTIFY belongs after commit (work/wakeups.ts), never in a command's statement").toEqual([]);
    expect(
      await Bun.file("src/entitlement/work/wakeups.ts").text(),
      "sent on the pool, not in a transaction",
    ).not.toMatch(/\.begin\(/);
  });
});
