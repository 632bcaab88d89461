// The outage tests' TCP proxy (tests/support/tcp-proxy.ts) must forward every byte in order, also when a socket takes
// only part of a chunk: a large reply to a reader that is slow to read fills the kernel's buffers, and a proxy that
// dropped what write() did not take corrupted the PostgreSQL protocol stream of a child service under load. A client
// reaches the proxy by the proxy's own address: it listens on loopback only, wherever the server it fronts is.
import { afterAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import type { Socket } from "bun";
import { startTcpProxy, startTcpProxyFor, targetOf, throughProxy } from "../support/tcp-proxy.ts";

const PAYLOAD = new Uint8Array(32 * 1024 * 1024).map((_, i) => (i * 7919) % 251);
const digest = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Sends the payload from `sent` on, as far as the socket takes it; ends the connection once all is out. */
type Sending = { sent: number; started: boolean };
function push(socket: Socket<Sending>) {
  while (socket.data.sent < PAYLOAD.byteLength) {
    const n = socket.write(PAYLOAD.subarray(socket.data.sent, socket.data.sent + 1024 * 1024));
    if (n <= 0) return;
    socket.data.sent += n;
  }
  socket.end();
}

// On the client's first bytes, the whole payload, written as the socket takes it (the rest on drain).
const server = Bun.listen<Sending>({
  hostname: "127.0.0.1",
  port: 0,
  socket: {
    open(socket) {
      socket.data = { sent: 0, started: false };
    },
    data(socket) {
      if (socket.data.started) return;
      socket.data.started = true;
      push(socket);
    },
    drain(socket) {
      if (socket.data.started) push(socket);
    },
  },
});
afterAll(() => server.stop(true));

test("a 32 MiB reply to a slow reader arrives through the proxy whole and in order", async () => {
  const proxy = startTcpProxy({ host: "127.0.0.1", port: server.port });
  try {
    const received: Uint8Array[] = [];
    let size = 0;
    const done = Promise.withResolvers<void>();
    const client = await Bun.connect({
      hostname: "127.0.0.1",
      port: proxy.port,
      socket: {
        data(_socket, chunk) {
          received.push(new Uint8Array(chunk));
          size += chunk.byteLength;
        },
        close() {
          done.resolve();
        },
      },
    });
    client.pause?.(); // read nothing at first: the proxy's writes to this client stop being taken whole
    client.write("go");
    await Bun.sleep(300);
    client.resume?.();
    await done.promise;
    const all = new Uint8Array(size);
    let at = 0;
    for (const part of received) {
      all.set(part, at);
      at += part.byteLength;
    }
    expect(size).toBe(PAYLOAD.byteLength);
    expect(digest(all)).toBe(digest(PAYLOAD));
  } finally {
    proxy.stop();
  }
});

test("a URL through the proxy names the proxy's host and port, whatever host the server was reported at", () => {
  const reported = "postgres://postgres:secret@172.17.0.1:32768/test_db?sslmode=disable&application_name=t";
  expect(throughProxy(reported, { host: "127.0.0.1", port: 40123 })).toBe(
    "postgres://postgres:secret@127.0.0.1:40123/test_db?sslmode=disable&application_name=t",
  );
  expect(targetOf(reported, 5432)).toEqual({ host: "172.17.0.1", port: 32768 });
  expect(targetOf("postgres://postgres@db.internal/x", 5432)).toEqual({ host: "db.internal", port: 5432 });
  expect(targetOf("postgres://postgres@[fd00::2]:6432/x", 5432)).toEqual({ host: "fd00::2", port: 6432 });
});

test("startTcpProxyFor gives the URL at the proxy's own address, which reaches the server", async () => {
  const proxy = startTcpProxyFor(`tcp://user@localhost:${server.port}/db`);
  try {
    const url = new URL(proxy.url);
    expect(proxy.host).toBe("127.0.0.1");
    expect(url.hostname).toBe(proxy.host);
    expect(Number(url.port)).toBe(proxy.port);
    expect(url.pathname).toBe("/db");
    const first = Promise.withResolvers<number>();
    const client = await Bun.connect({
      hostname: url.hostname,
      port: Number(url.port),
      socket: { data: (_socket, chunk) => first.resolve(chunk.byteLength) },
    });
    client.write("go");
    expect(await first.promise).toBeGreaterThan(0);
    client.terminate();
  } finally {
    proxy.stop();
  }
});
