// The readers of the players' phase (players.ts), in processes of their own so that parsing thousands of streams does
// not share the harness's event loop with the grants it paces and times. Run as a child (`bun stream-readers.ts`,
// with IPC): told `{ url, tokens }`, it opens one stream per token and answers `{ opened }`; it then tells the parent
// `{ sku, at }` for each notification event (`at` in epoch milliseconds, comparable across processes); `{ close }`
// ends it. Each child holds one fetch connection and one file descriptor per stream, so a child takes at most
// READERS_PER_PROCESS streams and is started with room for them in BUN_CONFIG_MAX_HTTP_REQUESTS.

/** Streams one reader process holds: well below this machine's 20,000 descriptors per process. */
export const READERS_PER_PROCESS = 5_000;

export type Reader = { close: () => void };
export type OnEvent = (seq: number, data: string) => void;

/** Epoch milliseconds with performance.now()'s resolution: comparable between the harness and its readers. */
export const epochMs = () => performance.timeOrigin + performance.now();

/** Opens one stream and calls back for each notification event; resolves once the response headers are in. */
export async function openStream(url: string, token: string, handle: OnEvent, lastEventId?: string): Promise<Reader> {
  const abort = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (lastEventId !== undefined) headers["last-event-id"] = lastEventId;
  const response = await fetch(`${url}/v1/me/notifications/stream`, { headers, signal: abort.signal });
  if (response.status !== 200 || !response.body) throw new Error(`a stream was refused: ${response.status}`);
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const id = /^id: (\d+)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (id && data && frame.includes("event: notification")) handle(Number(id), data);
        }
      }
    } catch {
      // closed by the harness
    }
  })();
  return { close: () => abort.abort() };
}

/** The SKU of a grant's notification, which names the grant. */
export const skuOf = (data: string) =>
  (JSON.parse(data) as { payload: { stock_keeping_unit?: string } }).payload.stock_keeping_unit;

type ToReader = { url: string; tokens: string[] } | { close: true };
export type FromReader = { opened: number } | { failed: string } | { sku: string; at: number };

/** Opens `tokens` streams a hundred at a time (the server's accept queue and the token checks stay short). */
async function openAll(url: string, tokens: string[], onEvent: OnEvent): Promise<Reader[]> {
  const readers: Reader[] = [];
  for (let i = 0; i < tokens.length; i += 100) {
    readers.push(...(await Promise.all(tokens.slice(i, i + 100).map((t) => openStream(url, t, onEvent)))));
  }
  return readers;
}

function runAsChild(): void {
  const send = (message: FromReader) => process.send?.(message);
  const readers: Reader[] = [];
  const onEvent: OnEvent = (_seq, data) => {
    const sku = skuOf(data);
    if (sku) send({ sku, at: epochMs() });
  };
  process.on("message", (message: ToReader) => {
    if ("close" in message) {
      for (const reader of readers) reader.close();
      process.exit(0);
    }
    openAll(message.url, message.tokens, onEvent).then(
      (opened) => {
        readers.push(...opened);
        send({ opened: readers.length });
      },
      (error: unknown) => send({ failed: error instanceof Error ? error.message : String(error) }),
    );
  });
}

export type ReaderPool = {
  /** Opens a stream per token, spread evenly over the reader processes; resolves once every one is open. */
  open: (url: string, tokens: string[]) => Promise<void>;
  pids: number[];
  close: () => Promise<void>;
};

/** Starts `processes` reader processes; `onEvent` hears of every notification event any of them reads. */
export function startReaders(processes: number, onEvent: (sku: string, at: number) => void): ReaderPool {
  const children = Array.from({ length: processes }, () => {
    let waiting: PromiseWithResolvers<void> | undefined;
    const child = Bun.spawn([process.execPath, import.meta.path], {
      env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: String(READERS_PER_PROCESS + 256) },
      stdio: ["ignore", "inherit", "inherit"],
      ipc: (message: FromReader) => {
        if ("sku" in message) onEvent(message.sku, message.at);
        else if ("opened" in message) waiting?.resolve();
        else waiting?.reject(new Error(`a reader process failed: ${message.failed}`));
      },
    });
    const open = (url: string, tokens: string[]) => {
      waiting = Promise.withResolvers<void>();
      child.send({ url, tokens } satisfies ToReader);
      return waiting.promise;
    };
    return { child, open };
  });
  return {
    open: async (url, tokens) => {
      const share = Math.ceil(tokens.length / processes);
      await Promise.all(children.map((c, i) => c.open(url, tokens.slice(i * share, (i + 1) * share))));
    },
    pids: children.map((c) => c.child.pid),
    close: async () => {
      for (const { child } of children) if (child.exitCode === null) child.send({ close: true } satisfies ToReader);
      await Promise.all(children.map(({ child }) => Promise.race([child.exited, Bun.sleep(5_000)])));
      for (const { child } of children) child.kill("SIGKILL");
    },
  };
}

if (import.meta.main) runAsChild();
