// A sampling profile of a PostgreSQL cluster: every few milliseconds, what each active backend of the services runs
// and what it waits for (pg_stat_activity). Shares of samples tell where the database's time goes during a phase
// without pg_stat_statements, which stock settings do not load.
import type postgres from "postgres";

/** `backends`: how many backends were, on average over the samples, in that state. */
export type ActivityProfile = { samples: number; top: { what: string; backends: number }[] };

type Row = { app: string; query: string; wait: string | null };

/** A statement's first words, ids and literals dropped: enough to tell the claim from the execute from the relay. */
const shape = (query: string) =>
  query
    .replace(/\s+/g, " ")
    .replace(/\$\d+|'[^']*'|\b\d+\b/g, "?")
    .trim()
    .slice(0, 70);

/** Samples every `everyMs` until the returned function is called; it gives the top (service, wait, statement). */
export function sampleActivity(sql: postgres.Sql, everyMs = 20): () => Promise<ActivityProfile> {
  const counts = new Map<string, number>();
  let samples = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const rows = await sql<Row[]>`
        select application_name as app, query, wait_event_type || ':' || wait_event as wait from pg_stat_activity
        where state = 'active' and pid <> pg_backend_pid() and backend_type = 'client backend'`.catch(() => []);
      samples += 1;
      for (const r of rows) {
        const key = `${r.app} | ${r.wait ?? "CPU"} | ${shape(r.query)}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      await Bun.sleep(everyMs);
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    const top = [...counts]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([what, n]) => ({ what, backends: Math.round((n / Math.max(1, samples)) * 1000) / 1000 }));
    return { samples, top };
  };
}
