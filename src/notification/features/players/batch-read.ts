// The streams' reads gathered into few statements. A stored batch wakes the streams of each of its players at once
// (1,000 recipients, 1,000 streams); each asks for its player's rows after its own position. Asked one statement each,
// they queued on the pool's connections and the last stream of a batch waited for a thousand round trips. Here every
// ask made in the same turn of the event loop waits for that turn to end, and all of them are answered by one
// statement per `chunk` asks.
import type { PlayerRow } from "./queries.ts";

export type Ask = { userId: string; afterSeq: string };
/** The rows after one stream's position, in seq order. */
export type ReadAfter = (ask: Ask) => Promise<PlayerRow[]>;
/** The rows of each ask, in the asks' order. */
export type ReadMany = (asks: Ask[]) => Promise<PlayerRow[][]>;

type Waiting = { ask: Ask; resolve: (rows: PlayerRow[]) => void; reject: (error: unknown) => void };

export function createBatchedReads(readMany: ReadMany, chunk: number): ReadAfter {
  let waiting: Waiting[] = [];
  const answer = (part: Waiting[]) =>
    readMany(part.map((w) => w.ask)).then(
      (rows) => {
        for (const [i, w] of part.entries()) w.resolve(rows[i] ?? []);
      },
      (error: unknown) => {
        for (const w of part) w.reject(error);
      },
    );
  const flush = () => {
    const all = waiting;
    waiting = [];
    for (let i = 0; i < all.length; i += chunk) void answer(all.slice(i, i + chunk));
  };
  return (ask) =>
    new Promise((resolve, reject) => {
      if (waiting.length === 0) setImmediate(flush);
      waiting.push({ ask, resolve, reject });
    });
}
