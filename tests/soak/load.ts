// Grants and revokes at a steady rate to the players whose streams are open: each grant a new item of a random player
// (version 0), each revoke one granted item (version 1), about one request in four a revoke. Requests go to the
// Entitlement replicas that run, in turn. What got no answer, a 5xx (a killed replica, a failover, the API's 503
// when it has too much in progress) or a 429 (the caller's rate limit, which the retries after a failover reach) is
// sent again with the same key and body after a growing pause, at least the answer's Retry-After (retryPauseMs), until
// a definite answer, as a payment system retries: that answer is the request's `settled` one. A 429 is never the end:
// an earlier attempt under the key may have committed, and only the replay's 200 tells the client so. Once the load
// stops, open requests keep retrying until the settle deadline; what is still open then is left to
// tests/drills/settle.ts.
import { definite, send } from "../drills/client.ts";
import type { Recorded } from "../drills/load.ts";
import type { Attempt } from "./attempts.ts";
import { paced, retryPauseMs } from "./sends.ts";

/** As finalAnswer and settleUnanswered read an answer (tests/drills/client.ts): a 5xx or a 429 is not definite. */
const unanswered = (answer: Parameters<typeof definite>[0]) => !definite(answer);

export type SoakLoad = { sent: Recorded[]; inFlight: () => number; stop: (settleMs: number) => Promise<void> };

type LoadOptions = {
  players: string[];
  rate: number;
  urls: () => string[];
  token: string;
  prefix: string;
  /** The soak's shared bound on requests on the wire (attempts.ts). */
  attempt: Attempt;
};

const REVOKE_SHARE = 0.25;

/** Sends `record` again until a definite answer (its `settled`) or the deadline; each try to the next replica. */
async function retry(record: Recorded, next: () => string, deadline: () => number, o: LoadOptions) {
  let last = record.answer;
  for (let attempt = 0; Date.now() < deadline(); attempt++) {
    await Bun.sleep(retryPauseMs(attempt, Math.random, last?.retryAfterS));
    const { answer } = await o.attempt(() => send(next(), o.token, record));
    if (definite(answer)) {
      record.settled = answer;
      return;
    }
    last = answer;
  }
}

export function startLoad(o: LoadOptions): SoakLoad {
  const sent: Recorded[] = [];
  const granted: Recorded[] = [];
  const pending = new Set<Promise<void>>();
  let running = true;
  let deadline = Number.POSITIVE_INFINITY;
  let n = 0;
  let turn = 0;
  const nextUrl = () => {
    const urls = o.urls();
    return urls[turn++ % urls.length] ?? "";
  };
  const fire = (record: Recorded) => {
    record.replica = nextUrl();
    const p = o
      .attempt(() => send(record.replica, o.token, record))
      .then(async (result) => {
        Object.assign(record, result);
        if (unanswered(result.answer)) await retry(record, nextUrl, () => deadline, o);
        const final = unanswered(result.answer) ? record.settled : result.answer;
        if (record.action === "grants" && final?.status === 200) granted.push(record);
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
  const loop = paced(
    o.rate,
    () => running,
    () => fire(next()),
  );
  return {
    sent,
    inFlight: () => pending.size,
    stop: async (settleMs) => {
      running = false;
      await loop;
      deadline = Date.now() + settleMs;
      await Promise.all([...pending]);
    },
  };
}
