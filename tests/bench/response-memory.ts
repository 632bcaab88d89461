// What Bun's server holds for an open streamed response, by the high-water mark of its body, run by hand:
// `bun tests/bench/response-memory.ts [streams] [strategy…]` (3,000; every strategy below). A bare Bun.serve whose
// responses write one SSE comment and stay open, read by a process of its own (stream-readers.ts); RSS after one
// response and after all of them, each after a full collection, divided by the responses. Each strategy runs in a
// process of its own.
import { rssMb } from "./stack.ts";
import { startReaders } from "./stream-readers.ts";

const STRATEGIES: Record<string, QueuingStrategy<Uint8Array>> = {
  "chunks:1": { highWaterMark: 1 },
  "chunks:1024": { highWaterMark: 1_024 },
  "bytes:16KiB": { highWaterMark: 16 * 1024, size: (c) => c?.byteLength ?? 0 },
  "bytes:256KiB": { highWaterMark: 256 * 1024, size: (c) => c?.byteLength ?? 0 },
};
const OPENING = new TextEncoder().encode(": stream open\n\n");

async function measure(name: string, streams: number): Promise<void> {
  const strategy = STRATEGIES[name];
  if (!strategy) throw new Error(`no strategy ${name}; one of ${Object.keys(STRATEGIES).join(", ")}`);
  const held: ReadableStreamDefaultController<Uint8Array>[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    fetch: () => {
      const body = new ReadableStream<Uint8Array>({ start: (c) => void held.push(c) }, strategy);
      held.at(-1)?.enqueue(OPENING);
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    },
  });
  const url = `http://127.0.0.1:${server.port}`;
  const pool = startReaders(1, () => {});
  const settled = async () => {
    await Bun.sleep(1_500);
    Bun.gc(true);
    return rssMb(process.pid);
  };
  await pool.open(url, ["-"]);
  const before = await settled();
  await pool.open(
    url,
    Array.from({ length: streams - 1 }, () => "-"),
  );
  const kb = (((await settled()) - before) * 1024) / (streams - 1);
  console.log(`${name.padEnd(14)} ${kb.toFixed(2)} KB of RSS a response (${streams})`);
  await pool.close();
  server.stop(true);
}

const [streams = "3000", ...names] = process.argv.slice(2);
if (names.length === 1) await measure(names[0] as string, Number(streams));
else {
  for (const name of names.length > 0 ? names : Object.keys(STRATEGIES)) {
    await Bun.spawn([process.execPath, import.meta.path, streams, name], { stdio: ["ignore", "inherit", "inherit"] })
      .exited;
  }
}
process.exit(0);
