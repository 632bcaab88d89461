// A private 3-node nats-server cluster with JetStream (tools/infra/nats.ts servers with routes on loopback ports, one
// store folder per node), for tests and drills that kill, restart and pause single nodes. The shared NATS is never
// touched.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { natsServer, requireNatsServer } from "../../tools/infra/nats.ts";
import { freePort } from "../../tools/infra/net.ts";
import { waitUntil } from "./wait.ts";

export type NatsNode = {
  name: string;
  url: string;
  /** The node's monitoring endpoint (`/jsz`, `/connz`, ...). */
  monitorUrl: string;
  running: () => boolean;
  /** Starts the node on its port and store and waits until it accepts clients. */
  start: () => Promise<void>;
  /** SIGKILL (a crash) or SIGTERM (a clean stop); resolves once the process is gone. */
  stop: (signal?: "SIGKILL" | "SIGTERM") => Promise<void>;
  pause: () => void;
  resume: () => void;
};

export type NatsCluster = {
  nodes: NatsNode[];
  /** Every node, comma-separated: what a service's NATS_URL holds. */
  url: string;
  /** The node that leads `stream` now (JetStream meta data), or undefined while there is none. */
  leaderOf: (stream: string) => Promise<NatsNode | undefined>;
  /** Kills every node and removes the folder unless `keep` (synchronous: it also runs from an exit handler). */
  dispose: (keep?: boolean) => void;
};

type ClusterOptions = { root?: string; logDir?: string; size?: number };

export async function startNatsCluster(options: ClusterOptions = {}): Promise<NatsCluster> {
  requireNatsServer();
  const folder = options.root ?? mkdtempSync(join(tmpdir(), "nats-cluster-"));
  // A free port can be taken by another process between freePort() and the bind (test runs share the machine): on a
  // failed start every node started is killed, and the cluster is tried once more on new ports.
  for (let attempt = 1; ; attempt++) {
    const nodes = createNodes(folder, options);
    const url = nodes.map((n) => n.url).join(",");
    try {
      await Promise.all(nodes.map((n) => n.start()));
      await waitForMetaPeers(nodes);
      return clusterOf(nodes, url, () => {
        if (!options.root) rmSync(folder, { recursive: true, force: true });
      });
    } catch (error) {
      await Promise.all(nodes.map((n) => n.stop("SIGKILL")));
      for (const n of nodes) rmSync(join(folder, n.name), { recursive: true, force: true });
      if (attempt >= 2) {
        if (!options.root) rmSync(folder, { recursive: true, force: true });
        throw error;
      }
    }
  }
}

function createNodes(folder: string, options: ClusterOptions): NatsNode[] {
  const size = options.size ?? 3;
  const specs = Array.from({ length: size }, (_, i) => ({
    name: `n${i + 1}`,
    port: freePort(),
    route: freePort(),
    monitor: freePort(),
  }));
  const routes = specs.map((s) => `nats://127.0.0.1:${s.route}`).join(",");
  return specs.map((spec): NatsNode => {
    const store = join(folder, spec.name);
    mkdirSync(store, { recursive: true });
    const server = natsServer({
      store,
      port: spec.port,
      args: ["-n", spec.name, "-m", String(spec.monitor), "--cluster_name", "drill"].concat([
        "--cluster",
        `nats://127.0.0.1:${spec.route}`,
        "--routes",
        routes,
      ]),
      log: options.logDir ? join(options.logDir, `nats-${spec.name}.log`) : undefined,
    });
    return {
      name: spec.name,
      url: server.url,
      monitorUrl: `http://127.0.0.1:${spec.monitor}`,
      running: server.running,
      start: server.start,
      stop: (signal = "SIGKILL") => server.stop(signal),
      pause: server.pause,
      resume: server.resume,
    };
  });
}

function clusterOf(nodes: NatsNode[], url: string, removeFolder: () => void): NatsCluster {
  return {
    nodes,
    url,
    leaderOf: async (stream) => {
      const name = await withManager(url, async (jsm) => (await jsm.streams.info(stream)).cluster?.leader);
      return nodes.find((n) => n.name === name);
    },
    dispose: (keep = false) => {
      for (const n of nodes) if (n.running()) void n.stop("SIGKILL");
      if (!keep) removeFolder();
    },
  };
}

async function withManager<T>(url: string, work: (jsm: Awaited<ReturnType<typeof jetstreamManager>>) => Promise<T>) {
  const nc = await connect({ servers: url.split(","), timeout: 2_000, maxReconnectAttempts: 2 });
  try {
    return await work(await jetstreamManager(nc, { timeout: 2_000 }));
  } finally {
    await nc.close();
  }
}

type MetaCluster = { leader?: string; cluster_size?: number; replicas?: { name: string; current: boolean }[] };

/** One node's view of the JetStream meta group, from its `/jsz` monitoring endpoint; undefined while it cannot say. */
async function metaOf(node: NatsNode): Promise<MetaCluster | undefined> {
  const response = await fetch(`${node.monitorUrl}/jsz`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
  if (!response?.ok) return undefined;
  return ((await response.json()) as { meta_cluster?: MetaCluster }).meta_cluster;
}

/**
 * A meta leader is elected as soon as a quorum (2 of 3) has formed, and JetStream then answers API requests; but an R3
 * stream can be placed only once the leader knows every peer as current, or it fails with "no suitable peers for
 * placement" (10005). On a loaded machine the third node joins seconds later, which is how this file's tests failed
 * in a full check at load average 20. So wait until every node names the same leader and a meta group of all the
 * nodes, and the leader lists every other node as a current replica.
 */
async function waitForMetaPeers(nodes: NatsNode[]): Promise<void> {
  let seen: (MetaCluster | undefined)[] = [];
  const ready = async () => {
    seen = await Promise.all(nodes.map(metaOf));
    const leader = seen[0]?.leader;
    const agreed = seen.every((m) => m?.leader === leader && m?.cluster_size === nodes.length);
    const replicas = seen[nodes.findIndex((n) => n.name === leader)]?.replicas ?? [];
    return leader !== undefined && agreed && replicas.length === nodes.length - 1 && replicas.every((r) => r.current);
  };
  await waitUntil(ready, "a JetStream meta leader with every node a current peer", 30_000, 250).catch((error) => {
    const views = nodes.map((n, i) => `${n.name}: ${JSON.stringify(seen[i] ?? "no /jsz answer")}`).join("; ");
    throw new Error(`${(error as Error).message} (last seen: ${views})`, { cause: error });
  });
}
