// Grants and revokes at a steady rate to the players whose streams are open: each grant a new item of a random player
// (version 0), each revoke one granted item (version 1), about one request in four a revoke. Requests go to the
// Entitlement replicas that run, in turn; what got no answer or a 5xx is settled by an idempotent replay at the end
// (tests/drills/settle.ts), as a payment system retries.
import { send } from "../drills/client.ts";
import type { Recorded } from "../drills/load.ts";

export type SoakLoad = { sent: Recorded[]; inFlight: () => number; stop: () => Promise<void> };

type LoadOptions = {
  players: string[];
  rate: number;
  urls: () => string[];
  token: string;
  prefix: string;
};

const TICK_MS = 50;
const REVOKE_SHARE = 0.25;

export function startLoad(o: LoadOptions): SoakLoad {
  const sent: Recorded[] = [];
  const granted: Recorded[] = [];
  const pending = new Set<Promise<void>>();
  let running = true;
  let n = 0;
  let turn = 0;
  const fire = (record: Recorded) => {
    const urls = o.urls();
    record.replica = urls[turn++ % urls.length] ?? "";
    const p = send(record.replica, o.token, record).then((result) => {
      Object.assign(record, result);
      if (record.action === "grants" && result.answer?.status === 200) granted.push(record);
    });
    pending.add(p);
    void p.finally(() => pending.delete(p));
    sent.push(record);
  };
  const next = (): Recorded => {
    const revoke = granted.length > 0 && Math.random() < REVOKE_SHARE;
    const base = { kind: "fresh" as const, replica: "", startedAt: Date.now(), ms: 0 };
    if (revoke) {
      const grant = granted.splice(Math.floor(Math.random() * granted.length), 1)[0] as Recorded;
      const body = { ...grant.body, reason: "soak-revoke" };
      return { ...base, action: "revokes", key: `${grant.key}-r`, body, expect: { status: 200, version: 1 } };
    }
    const user = o.players[Math.floor(Math.random() * o.players.length)] as string;
    const sku = `sku-${n++}`;
    const body = { user_id: user, stock_keeping_unit: sku, reason: "soak", purchase_id: sku };
    return { ...base, action: "grants", key: `${o.prefix}${sku}`, body, expect: { status: 200, version: 0 } };
  };
  const loop = (async () => {
    const started = performance.now();
    for (let tick = 0; running; tick++) {
      const due = Math.round(((tick + 1) * TICK_MS * o.rate) / 1000) - Math.round((tick * TICK_MS * o.rate) / 1000);
      for (let i = 0; i < due; i++) fire(next());
      const wait = started + (tick + 1) * TICK_MS - performance.now();
      if (wait > 0) await Bun.sleep(wait);
    }
  })();
  return {
    sent,
    inFlight: () => pending.size,
    stop: async () => {
      running = false;
      await loop;
      await Promise.all([...pending]);
    },
  };
}
