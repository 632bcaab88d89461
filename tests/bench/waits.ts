// What a service's PostgreSQL backends are doing while a phase runs: each backend inside a statement is sampled as its
// wait event (`LWLock:WALWrite`, `Lock:transactionid` …) or `CPU` when it waits on nothing, counted per service (the
// pool's application_name, which each service sets to its own name). Contention shows as lock or buffer waits, the
// commit's flush as WALWrite and WALSync; a statement slower under load but with the same shares does more work.
import postgres from "postgres";

/** Each service's samples: wait event → how often a backend of it was seen in it. */
export type Waits = Record<string, Record<string, number>>;

/** Samples every `everyMs` on a connection of its own until the returned stop is called; it resolves the counts. */
export function sampleWaits(url: string, services: string[], everyMs: number): () => Promise<Waits> {
  const db = postgres(url, { max: 1, onnotice: () => {} });
  const waits: Waits = {};
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      const rows = await db<{ service: string; event: string }[]>`
        select application_name as service, coalesce(wait_event_type || ':' || wait_event, 'CPU') as event
        from pg_stat_activity
        where state = 'active' and pid <> pg_backend_pid() and application_name = any(${services})`;
      for (const r of rows) {
        const of = waits[r.service] ?? {};
        of[r.event] = (of[r.event] ?? 0) + 1;
        waits[r.service] = of;
      }
      await Bun.sleep(everyMs);
    }
  })();
  return async () => {
    stop = true;
    await loop;
    await db.end();
    return waits;
  };
}

/** One service's `top` events by share, most first: `LWLock:WALWrite 44 %`, with the count of samples. */
export function waitShares(events: Record<string, number>, top: number): { samples: number; shares: string[] } {
  const samples = Object.values(events).reduce((a, b) => a + b, 0);
  const shares = Object.entries(events)
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([event, n]) => `${event} ${((n * 100) / samples).toFixed(1)} %`);
  return { samples, shares };
}
