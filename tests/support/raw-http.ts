// One HTTP request written byte for byte on a TCP socket, for what `fetch` cannot send: no Host header, HTTP/1.0, an
// invalid percent-escape in the request target. Resolves with the status and the body once the server closes.
import { connect } from "node:net";

export type RawReply = { status: number; head: string; body: string };

/** `localAddress` picks the client's own address (any of 127.0.0.0/8 on Linux), to be another client to the server. */
export function rawRequest(port: number, text: string, timeoutMs = 10_000, localAddress?: string): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ port, host: "127.0.0.1", localAddress }, () => socket.write(text, "latin1"));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete reply within ${timeoutMs}ms to ${JSON.stringify(text.slice(0, 60))}`));
    }, timeoutMs);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      const all = Buffer.concat(chunks).toString("utf8");
      const split = all.indexOf("\r\n\r\n");
      const head = split < 0 ? all : all.slice(0, split);
      resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0), head, body: all.slice(split + 4) });
    });
  });
}

/** `GET <target>` with `Connection: close` and the given header lines (none: not even Host). */
export function rawGet(port: number, target: string, headerLines: string[] = ["Host: localhost"], version = "1.1") {
  return rawRequest(
    port,
    `GET ${target} HTTP/${version}\r\n${[...headerLines, "Connection: close"].join("\r\n")}\r\n\r\n`,
  );
}
