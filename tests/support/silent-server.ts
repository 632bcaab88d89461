// A TCP server that accepts connections and never says a word: a database that took the connection and hangs (a
// stuck server, a dead link behind a proxy). Readiness probes against it must still answer in bounded time.
import type { TCPSocketListener } from "bun";

export type SilentServer = { url: string; stop: () => void };

/** A postgres:// URL to a silent listener on an ephemeral port of 127.0.0.1. */
export function startSilentPostgres(): SilentServer {
  const sockets = new Set<Parameters<NonNullable<Bun.SocketHandler["open"]>>[0]>();
  const listener: TCPSocketListener = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open: (socket) => void sockets.add(socket),
      data: () => {},
      close: (socket) => void sockets.delete(socket),
    },
  });
  return {
    url: `postgres://silent@127.0.0.1:${listener.port}/silent`,
    stop: () => {
      for (const socket of sockets) socket.end();
      listener.stop(true);
    },
  };
}
