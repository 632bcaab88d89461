// A TCP proxy in front of a real server, for outage tests: `down()` drops every connection and refuses new ones,
// `up()` accepts again on the same port. The server itself (the shared PostgreSQL) is never touched. The proxy listens
// on 127.0.0.1 only, wherever the server is (Testcontainers may report it at the bridge gateway, 172.17.0.1): a client
// goes through it by the proxy's own address, host and port (`startTcpProxyFor` gives the rewritten URL).
//
// A Bun socket's write() may take only part of a chunk when the kernel buffer is full (a loaded machine, a large
// result): what it did not take waits in the side's backlog and goes out, in order, on the socket's drain event.
// Dropping it would corrupt the protocol stream between the service and PostgreSQL.
import type { Socket, TCPSocketListener } from "bun";

/** One end of a proxied connection; `ending`: the other end closed, so end this one once its backlog is out. */
type Side = { socket?: Socket<Pair>; backlog: Uint8Array[]; ending?: boolean };
type Pair = { client: Side; upstream: Side };

export type TcpProxy = { host: string; port: number; down: () => void; up: () => void; stop: () => void };

const LISTEN_HOST = "127.0.0.1";

/** The server `url` names: its host (an IPv6 address without its brackets) and port, `defaultPort` when it has none. */
export function targetOf(url: string, defaultPort: number): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname.replace(/^\[(.*)\]$/, "$1"), port: Number(parsed.port || defaultPort) };
}

/** `url` through the proxy: its host and port replaced by the proxy's own, everything else kept. */
export function throughProxy(url: string, proxy: { host: string; port: number }): string {
  const rewritten = new URL(url);
  rewritten.hostname = proxy.host;
  rewritten.port = String(proxy.port);
  return rewritten.toString();
}

/** A proxy in front of the server `url` names (PostgreSQL's port when it names none), and the URL that goes through it. */
export function startTcpProxyFor(url: string, defaultPort = 5432): TcpProxy & { url: string } {
  const proxy = startTcpProxy(targetOf(url, defaultPort));
  return { ...proxy, url: throughProxy(url, proxy) };
}

/** Sends `chunk` to `side` after whatever is still waiting there; keeps the unwritten rest for the next drain. */
function send(side: Side, chunk: Uint8Array) {
  if (!side.socket || side.backlog.length > 0) {
    side.backlog.push(chunk.slice());
    return;
  }
  const written = side.socket.write(chunk);
  if (written < chunk.byteLength) side.backlog.push(chunk.slice(Math.max(written, 0)));
}

/** Writes the side's backlog until the socket takes no more; ends it once everything is out, if it is ending. */
function flush(side: Side) {
  while (side.socket && side.backlog.length > 0) {
    const head = side.backlog[0] as Uint8Array;
    const written = side.socket.write(head);
    if (written < head.byteLength) {
      side.backlog[0] = head.slice(Math.max(written, 0));
      return;
    }
    side.backlog.shift();
  }
  if (side.ending) side.socket?.end();
}

/** The other end closed: this one ends after what is still waiting for it. */
function endAfterBacklog(side: Side) {
  side.ending = true;
  flush(side);
}

/** A client connected: it is paired with a new connection to `target`, which relays both ways until either closes. */
function openPair(client: Socket<Pair>, target: { host: string; port: number }, pairs: Set<Pair>) {
  const pair: Pair = { client: { socket: client, backlog: [] }, upstream: { backlog: [] } };
  client.data = pair;
  pairs.add(pair);
  Bun.connect<Pair>({
    hostname: target.host,
    port: target.port,
    data: pair,
    socket: {
      open(upstream) {
        pair.upstream.socket = upstream;
        flush(pair.upstream);
      },
      data(_upstream, chunk) {
        send(pair.client, chunk);
      },
      drain() {
        flush(pair.upstream);
      },
      close() {
        endAfterBacklog(pair.client);
        pairs.delete(pair);
      },
      error() {
        pair.client.socket?.end();
      },
    },
  }).catch(() => client.end());
}

export function startTcpProxy(target: { host: string; port: number }): TcpProxy {
  const pairs = new Set<Pair>();
  let listener: TCPSocketListener<Pair> | undefined;
  let port = 0;

  const listen = () => {
    listener = Bun.listen<Pair>({
      hostname: LISTEN_HOST,
      port,
      socket: {
        open(client) {
          openPair(client, target, pairs);
        },
        data(client, chunk) {
          send(client.data.upstream, chunk);
        },
        drain(client) {
          flush(client.data.client);
        },
        close(client) {
          endAfterBacklog(client.data.upstream);
          pairs.delete(client.data);
        },
      },
    });
    port = listener.port;
  };
  listen();

  const down = () => {
    listener?.stop(true);
    listener = undefined;
    for (const pair of pairs) {
      pair.client.socket?.terminate();
      pair.upstream.socket?.terminate();
    }
    pairs.clear();
  };
  return {
    host: LISTEN_HOST,
    port,
    down,
    up: () => {
      if (!listener) listen();
    },
    stop: down,
  };
}
