// A TCP proxy in front of a real server, for outage tests: `down()` drops every connection and refuses new ones,
// `up()` accepts again on the same port. The server itself (the shared PostgreSQL) is never touched.
import type { Socket, TCPSocketListener } from "bun";

type Pair = { client: Socket<Pair>; upstream?: Socket<Pair>; pending: Uint8Array[] };

export type TcpProxy = { port: number; down: () => void; up: () => void; stop: () => void };

export function startTcpProxy(target: { host: string; port: number }): TcpProxy {
  const pairs = new Set<Pair>();
  let listener: TCPSocketListener<Pair> | undefined;
  let port = 0;

  const listen = () => {
    listener = Bun.listen<Pair>({
      hostname: "127.0.0.1",
      port,
      socket: {
        open(client) {
          const pair: Pair = { client, pending: [] };
          client.data = pair;
          pairs.add(pair);
          Bun.connect<Pair>({
            hostname: target.host,
            port: target.port,
            data: pair,
            socket: {
              open(upstream) {
                pair.upstream = upstream;
                for (const chunk of pair.pending) upstream.write(chunk);
                pair.pending = [];
              },
              data(_upstream, chunk) {
                pair.client.write(chunk);
              },
              close() {
                pair.client.end();
                pairs.delete(pair);
              },
              error() {
                pair.client.end();
              },
            },
          }).catch(() => client.end());
        },
        data(client, chunk) {
          const pair = client.data;
          if (pair.upstream) pair.upstream.write(chunk);
          else pair.pending.push(new Uint8Array(chunk));
        },
        close(client) {
          client.data.upstream?.end();
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
      pair.client.terminate();
      pair.upstream?.terminate();
    }
    pairs.clear();
  };
  return {
    port,
    down,
    up: () => {
      if (!listener) listen();
    },
    stop: down,
  };
}
