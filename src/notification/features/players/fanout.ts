// Which players have new notifications, told to every replica over a core NATS subject after the storing transaction
// committed (never inside it). A signal carries user ids only: each replica's streams read the notifications from the
// database by seq, so a signal lost (NATS away, a slow subscriber dropped) delays an event until the hub's recheck and
// never loses one. Why core NATS and not a stream: docs/decisions.md.
import type { Logger } from "../../../shared/logger.ts";
import type { NatsLink } from "../../../shared/nats.ts";
import type { Worker } from "../../../shared/runtime.ts";
import type { PlayerMetrics } from "./metrics.ts";

/** User ids per message: 500 ids of at most 128 characters stay well below NATS's default 1 MiB payload. */
const IDS_PER_MESSAGE = 500;

type Signal = { origin: string; users: string[] };

export type PlayerFanout = {
  /** Tells the other replicas (this one's streams were woken in memory already). */
  publish: (userIds: string[]) => void;
  /** Receives the other replicas' signals into `deliver`, and rechecks after each reconnect. */
  worker: Worker;
};

function parseSignal(data: Uint8Array): Signal | undefined {
  try {
    const value = JSON.parse(new TextDecoder().decode(data)) as Partial<Signal>;
    if (typeof value.origin !== "string" || !Array.isArray(value.users)) return undefined;
    return { origin: value.origin, users: value.users.filter((u): u is string => typeof u === "string") };
  } catch {
    return undefined;
  }
}

export function createPlayerFanout(deps: {
  link: NatsLink;
  subject: string;
  /** This process's id: its own signals come back from NATS and are skipped. */
  origin: string;
  log: Logger;
  metrics: PlayerMetrics;
  deliver: (userIds: string[]) => void;
  /** After a reconnect: what was signalled during the outage is found by rechecking. */
  recheck: () => Promise<void>;
  /** Tests drop signals to show that nothing depends on them. */
  dropOutgoing?: () => boolean;
}): PlayerFanout {
  const encoder = new TextEncoder();
  let connection: Awaited<ReturnType<NatsLink["get"]>>;

  function publish(userIds: string[]): void {
    const unique = [...new Set(userIds)];
    for (let i = 0; i < unique.length; i += IDS_PER_MESSAGE) {
      const users = unique.slice(i, i + IDS_PER_MESSAGE);
      if (!connection || !deps.link.connected() || deps.dropOutgoing?.()) {
        deps.metrics.signals.inc({ direction: "dropped" });
        continue;
      }
      try {
        connection.publish(deps.subject, encoder.encode(JSON.stringify({ origin: deps.origin, users })));
        deps.metrics.signals.inc({ direction: "published" });
      } catch (error) {
        deps.metrics.signals.inc({ direction: "dropped" });
        deps.log.debug({ err: error }, "a player signal was not published");
      }
    }
  }

  const worker: Worker = {
    name: "player-fanout",
    run: async (abort) => {
      connection = await deps.link.get(abort);
      if (!connection) return;
      const subscription = connection.subscribe(deps.subject);
      const stopRecheck = deps.link.onReconnect(() => void deps.recheck().catch(() => {}));
      abort.addEventListener("abort", () => subscription.unsubscribe(), { once: true });
      try {
        for await (const message of subscription) {
          const signal = parseSignal(message.data);
          if (!signal || signal.origin === deps.origin) continue;
          deps.metrics.signals.inc({ direction: "received" });
          deps.deliver(signal.users);
        }
      } finally {
        stopRecheck();
      }
    },
  };
  return { publish, worker };
}
