// Steady grant/revoke load against both replicas. Each load worker owns its users, so it knows what every answer
// must be (a small model of the state machine): a fresh pair is granted at version 0, a toggle moves the version by
// one, the same transition twice is 409 ENTITLEMENT_STATE_CONFLICT, a replay gets the original answer and a reused key
// with another body 409 IDEMPOTENCY_KEY_CONFLICT. A pair whose request went unanswered is left alone from then on.
// Poison is mixed in: ids with a control character (C0 or C1) or over the length limit, and expiries that name no real
// instant, must be 400 BAD_REQUEST whatever the fault (the edge refuses them before any database work), and none of
// them may ever be committed.
import { type Action, type Answer, type Body, type Sent, send } from "./client.ts";

export type Expectation = { status: number; code?: string; version?: number; same?: Answer };
export type Recorded = Sent & { expect: Expectation };

export type LoadOptions = {
  prefix: string;
  urls: () => string[];
  token: string;
  workers: number;
  pauseMs: number;
  random: () => number;
};

export type Load = { sent: Recorded[]; stop: () => Promise<void> };

type Pair = { user: string; sku: string; status: "ACTIVE" | "REVOKED"; version: number };

const SKUS = ["sku-sword", "sku-shield", "sku-map"];

/** What a careless or hostile caller puts in an id (C0, DEL and C1 controls): each is refused with 400 BAD_REQUEST. */
const POISON = ["\n", "\r\n", "\u0000", "\u001b[31m", "\u007f", "\u0085", "\u009b"];
/** Expiries that name no real instant, or one PostgreSQL cannot store: 400 BAD_REQUEST, never a 500 or a rollover. */
const POISON_DATES = ["2027-02-30T00:00:00+01:00", "0000-01-01T00:00:00Z", "2027-01-01T00:00:00+18:00"];
const POISON_SHARE = 0.05;

type Planned = Omit<Recorded, "replica" | "startedAt" | "ms">;

/** The same key again: with the same request (a replay: the original answer) or another body (a key conflict). */
function repeat(original: Recorded, sameRequest: boolean): Planned {
  const { action, key } = original;
  if (sameRequest) {
    const expect = { status: original.answer?.status ?? 0, same: original.answer };
    return { kind: "replay", action, key, body: original.body, original, expect };
  }
  const body = { ...original.body, reason: "drill-reused-key" };
  return { kind: "reuse", action, key, body, original, expect: { status: 409, code: "IDEMPOTENCY_KEY_CONFLICT" } };
}

/**
 * A grant whose user id (or SKU, or expiry) the API must refuse; the user id keeps the prefix, so a commit would show.
 * `n` picks one of POISON, then an over-long id, then one of POISON_DATES.
 */
function poison(key: string, user: string, body: (user: string, sku: string) => Body, n: number): Planned {
  const date = POISON_DATES[n - POISON.length - 1];
  const bad = date
    ? { ...body(user, "sku-map"), expires_at: date }
    : n === POISON.length
      ? body(`${user}-${"x".repeat(200)}`, "sku-map")
      : body(`${user}${POISON[n]}p`, "sku-map");
  if (n === 1) bad.stock_keeping_unit = `sku${POISON[n]}`;
  return { kind: "poison", action: "grants", key, body: bad, expect: { status: 400, code: "BAD_REQUEST" } };
}

/** Worker `w`'s `n`th request and the answer it must get, from what it knows of its pairs and its answered requests. */
function plan(options: LoadOptions, w: number, n: number, pairs: Pair[], answered: Recorded[]): Planned {
  const pick = <T>(items: T[]) => items[Math.floor(options.random() * items.length)] as T;
  const key = `${options.prefix}w${w}-k${n}-${crypto.randomUUID()}`;
  const body = (user: string, sku: string): Body => ({
    user_id: user,
    stock_keeping_unit: sku,
    reason: "drill",
    purchase_id: `p-${crypto.randomUUID()}`,
  });
  if (options.random() < POISON_SHARE) {
    const kinds = POISON.length + 1 + POISON_DATES.length;
    return poison(key, `${options.prefix}w${w}-u${n}`, body, Math.floor(options.random() * kinds));
  }
  const r = options.random();
  if (r < 0.4 || pairs.length === 0) {
    const user = `${options.prefix}w${w}-u${n}`;
    return {
      kind: "fresh",
      action: "grants",
      key,
      body: body(user, pick(SKUS)),
      expect: { status: 200, version: 0 },
    };
  }
  if (r < 0.85 || answered.length === 0) {
    const index = Math.floor(options.random() * pairs.length);
    const pair = pairs[index] as Pair;
    const toggle = r < 0.78;
    const action: Action = (pair.status === "ACTIVE") === toggle ? "revokes" : "grants";
    // The pair leaves the known set while its request is out; learn() puts it back with the answer.
    pairs.splice(index, 1);
    const expect = toggle
      ? { status: 200, version: pair.version + 1 }
      : { status: 409, code: "ENTITLEMENT_STATE_CONFLICT", version: pair.version };
    return { kind: "fresh", action, key, body: body(pair.user, pair.sku), expect };
  }
  return repeat(pick(answered), r < 0.95);
}

/** What an answer to a fresh request teaches its worker: the pair's state and version, and a request to repeat. */
function learn(record: Recorded, pairs: Pair[], answered: Recorded[]): void {
  if (record.kind !== "fresh") return;
  const a = record.answer;
  if (!a || a.status >= 500) return;
  answered.push(record);
  if (a.status === 200) {
    const status = a.body.status === "REVOKED" ? "REVOKED" : "ACTIVE";
    pairs.push({
      user: record.body.user_id,
      sku: record.body.stock_keeping_unit,
      status,
      version: Number(a.body.version),
    });
  } else if (a.status === 409 && record.expect.version !== undefined) {
    const status = record.action === "grants" ? "ACTIVE" : "REVOKED";
    pairs.push({
      user: record.body.user_id,
      sku: record.body.stock_keeping_unit,
      status,
      version: record.expect.version,
    });
  }
}

export function startLoad(options: LoadOptions): Load {
  const sent: Recorded[] = [];
  let stopped = false;
  let turn = 0;

  async function worker(w: number): Promise<void> {
    const pairs: Pair[] = [];
    const answered: Recorded[] = [];
    let n = 0;
    while (!stopped) {
      const next = plan(options, w, n++, pairs, answered);
      const urls = options.urls();
      const url = urls[turn++ % urls.length] as string;
      const startedAt = Date.now();
      const result = await send(url, options.token, next);
      const record: Recorded = { ...next, replica: url, startedAt, ...result };
      sent.push(record);
      learn(record, pairs, answered);
      // A refused or reset connection (a replica is down) is retried later, as a client with backoff would.
      const backoff = record.answer ? 0 : 250;
      await Bun.sleep(backoff + options.pauseMs * (0.5 + options.random()));
    }
  }

  const running = Array.from({ length: options.workers }, (_, w) => worker(w));
  return {
    sent,
    stop: async () => {
      stopped = true;
      await Promise.all(running);
    },
  };
}
