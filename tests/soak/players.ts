// The players: one live stream each, spread over the Notification replicas, that records every seq it receives and,
// whenever the stream is cut (a replica killed, a connection reset), reconnects to a replica that runs with
// Last-Event-ID set to the last seq it saw, as a game client does. Nothing else: the check compares what each player
// saw against the seqs stored for it.
export type PlayerStreams = {
  /** Every seq each player's streams delivered, in arrival order, across reconnects. */
  seqs: Map<string, number[]>;
  reconnects: () => number;
  /** `event: reset` or `event: closed` frames: neither may happen in a soak (no retention, one stream per player). */
  oddFrames: () => number;
  stop: () => void;
};

type StreamOptions = {
  players: string[];
  urls: () => string[];
  tokenFor: (userId: string) => Promise<string>;
};

/** Reads one stream until it ends or fails; calls `onFrame` with each event's name and id. */
async function readStream(response: Response, onFrame: (event: string, id: number | undefined) => void) {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (\S+)$/m.exec(frame)?.[1];
      const id = /^id: (\d+)$/m.exec(frame)?.[1];
      if (event) onFrame(event, id === undefined ? undefined : Number(id));
    }
  }
}

export async function openPlayerStreams(o: StreamOptions): Promise<PlayerStreams> {
  const abort = new AbortController();
  const seqs = new Map(o.players.map((p) => [p, [] as number[]]));
  let reconnects = 0;
  let odd = 0;
  const follow = async (player: string, index: number, token: string) => {
    const seen = seqs.get(player) as number[];
    for (let attempt = 0; !abort.signal.aborted; attempt++) {
      const urls = o.urls();
      const url = urls[(index + attempt) % urls.length];
      const headers = { authorization: `Bearer ${token}`, "last-event-id": String(seen.at(-1) ?? 0) };
      try {
        const response = await fetch(`${url}/v1/me/notifications/stream`, { headers, signal: abort.signal });
        if (response.status !== 200) throw new Error(`stream refused: ${response.status}`);
        await readStream(response, (event, id) => {
          if (event === "notification" && id !== undefined) seen.push(id);
          else if (event === "reset" || event === "closed") odd += 1;
        });
      } catch {}
      if (abort.signal.aborted) return;
      reconnects += 1;
      await Bun.sleep(250 + Math.random() * 750);
    }
  };
  for (let i = 0; i < o.players.length; i += 100) {
    const batch = o.players.slice(i, i + 100);
    const tokens = await Promise.all(batch.map(o.tokenFor));
    batch.forEach((p, j) => void follow(p, i + j, tokens[j] as string));
    await Bun.sleep(200);
  }
  return { seqs, reconnects: () => reconnects, oddFrames: () => odd, stop: () => abort.abort() };
}
