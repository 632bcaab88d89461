// The stream readers of the send phase (send.ts), in a process of their own: reading thousands of streams then does
// not share the event loop that starts and times the sends, and the harness's own parsing cannot delay a request.
// Run as a child with IPC (`bun send-readers.ts`): told `{ url, tokens }`, it opens one stream per token and answers
// `{ opened }`; then every 10 ms it tells the parent `{ arrivals: [[requestId, at], …] }` of the notification events
// read since (`at` in epoch milliseconds, comparable across processes); `{ close }` ends it. It is started with room
// for every stream in BUN_CONFIG_MAX_HTTP_REQUESTS (Bun's fetch holds 256 requests at once by default).

export type ReadersCommand = { url: string; tokens: string[] } | { close: true };
export type ReadersReport = { opened: number } | { arrivals: [string, number][] } | { failed: string };

/** Epoch milliseconds with performance.now()'s resolution: comparable between the harness and its readers. */
export const epochMs = () => performance.timeOrigin + performance.now();

const MARK = '"request_id":"';

/** Reads one stream's body, noting each request id it carries; no full SSE parsing, only the marker. */
async function read(body: ReadableStream<Uint8Array>, arrived: (requestId: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  try {
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      const text = decoder.decode(chunk, { stream: true });
      for (let at = text.indexOf(MARK); at >= 0; at = text.indexOf(MARK, at + MARK.length)) {
        const from = at + MARK.length;
        arrived(text.slice(from, text.indexOf('"', from)));
      }
    }
  } catch {
    // closed by the harness
  }
}

async function openAll(url: string, tokens: string[], abort: AbortSignal, arrived: (id: string) => void) {
  const openOne = async (token: string) => {
    const response = await fetch(`${url}/v1/me/notifications/stream`, {
      headers: { authorization: `Bearer ${token}` },
      signal: abort,
    });
    if (response.status !== 200 || !response.body) throw new Error(`a stream answered ${response.status}`);
    void read(response.body, arrived);
  };
  for (let i = 0; i < tokens.length; i += 200) await Promise.all(tokens.slice(i, i + 200).map(openOne));
}

if (import.meta.main) {
  const abort = new AbortController();
  let pending: [string, number][] = [];
  const send = (report: ReadersReport) => process.send?.(report);
  const flush = setInterval(() => {
    if (pending.length === 0) return;
    send({ arrivals: pending });
    pending = [];
  }, 10);
  process.on("message", (command: ReadersCommand) => {
    if ("close" in command) {
      abort.abort();
      clearInterval(flush);
      process.exit(0);
    }
    openAll(command.url, command.tokens, abort.signal, (id) => pending.push([id, epochMs()])).then(
      () => send({ opened: command.tokens.length }),
      (error: unknown) => send({ failed: String(error) }),
    );
  });
}
