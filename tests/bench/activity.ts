// A sampling profile of a PostgreSQL cluster: every few milliseconds, what each active backend of the services runs
// and what it waits for (pg_stat_activity). Shares of samples tell where the database's time goes during a phase
// without pg_stat_statements, which stock settings do not load; and the CPU the cluster spent for each client.
import { readFileSync } from "node:fs";
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

/** utime + stime of a process in seconds, or undefined when it is gone. */
function cpuSeconds(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds of the cluster's backends over a phase, by whom they served: the application_name of a client backend
 * (entitlement, notification, the harness's own connection) or the background process's type (walwriter,
 * checkpointer, autovacuum worker, …). Backends that connect during the phase count from zero; ones that exit before
 * its end are missed (the services' pools keep theirs).
 */
export async function measureClusterCpu(sql: postgres.Sql): Promise<() => Promise<Record<string, number>>> {
  type Backend = { pid: number; who: string };
  const backends = () =>
    sql<Backend[]>`
      select pid, case when backend_type = 'client backend' then coalesce(nullif(application_name, ''), 'client')
                       else backend_type end as who
      from pg_stat_activity`;
  const before = new Map((await backends()).map((b) => [b.pid, cpuSeconds(b.pid) ?? 0]));
  return async () => {
    const spent: Record<string, number> = {};
    for (const b of await backends()) {
      const now = cpuSeconds(b.pid);
      if (now === undefined) continue;
      spent[b.who] = Math.round(((spent[b.who] ?? 0) + now - (before.get(b.pid) ?? 0)) * 100) / 100;
    }
    return spent;
  };
}
