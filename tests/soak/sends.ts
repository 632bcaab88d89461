// The send API's share of the load: POST /v1/notifications (Notification, a token with the scope notify) at a steady
// rate, each to a few random players of the soak with a custom type, under an Idempotency-Key of its own. A send that
// gets no answer, a 5xx or a 429 is sent again with the same key and body, to the Notification replicas that run in
// turn, until it has a definite answer: a 202 (acknowledged: its notifications must be stored and notified once per
// recipient), or another refusal (not acknowledged, never counted as lost). Once the load stops, what is still open
// keeps retrying until the settle deadline; what never got a definite answer is reported as unsettled.
import { type Answer, CLIENT_TIMEOUT_MS, postJson } from "../drills/client.ts";
import type { Attempt } from "./attempts.ts";

/** The custom type of every soak send; the endpoints subscribe to it beside the built-in ones. */
export const SEND_TYPE = "SoakNotice";

export type SendBody = { type: string; user_ids: string[]; title: string; data: { n: number } };

export type SentNotice = {
  key: string;
  body: SendBody;
  startedAt: number;
  /** The first attempt's time and outcome (a status, or the client's error): the minute's figures. */
  ms: number;
  first: string;
  attempts: number;
  /** The definite answer (not 5xx, not 429); undefined while none came. */
  answer?: Answer;
};

export type SendLoad = {
  sent: SentNotice[];
  /** Sends answered 202. */
  count: () => number;
  inFlight: () => number;
  /** Stops sending; lets open sends retry for `settleMs` more; resolves with how many got no definite answer. */
  stop: (settleMs: number) => Promise<number>;
};

type SendOptions = {
  players: string[];
  urls: () => string[];
  rate: number;
  token: string;
  prefix: string;
  /** The soak's shared bound on requests on the wire (attempts.ts). */
  attempt: Attempt;
};

const MAX_RECIPIENTS = 4;
const MAX_BACKOFF_MS = 30_000;

/**
 * The pause before retry `attempt` (0 the first): 0.5 s doubling up to 30 s, times 0.5 to 1.5 at random, and never
 * shorter than the refusal's Retry-After (`retryAfterS`, at most a minute of it). Growing and spread, so that
 * thousands of requests refused at once (a failover, an overloaded API) do not come back together and keep it
 * overloaded.
 */
export const retryPauseMs = (attempt: number, random = Math.random, retryAfterS?: number) =>
  Math.max(Math.min(MAX_BACKOFF_MS, 500 * 2 ** attempt) * (0.5 + random()), Math.min(60, retryAfterS ?? 0) * 1000);

/** Whether an answer is worth the same request again: the service could not take it now (5xx, 429). */
export const retryable = (status: number) => status >= 500 || status === 429;

/** `count` distinct players, or all of them when there are fewer. */
export function pickRecipients(players: string[], count: number, random = Math.random): string[] {
  const picked = new Set<string>();
  while (picked.size < Math.min(count, players.length))
    picked.add(players[Math.floor(random() * players.length)] as string);
  return [...picked];
}

export function startSends(o: SendOptions): SendLoad {
  const sent: SentNotice[] = [];
  const pending = new Set<Promise<void>>();
  let running = true;
  let deadline = Number.POSITIVE_INFINITY;
  let turn = 0;
  const fire = (n: number) => {
    const userIds = pickRecipients(o.players, 1 + Math.floor(Math.random() * MAX_RECIPIENTS));
    const body = { type: SEND_TYPE, user_ids: userIds, title: "Soak", data: { n } };
    const notice: SentNotice = {
      key: `${o.prefix}send-${n}`,
      body,
      startedAt: Date.now(),
      ms: 0,
      first: "",
      attempts: 0,
    };
    sent.push(notice);
    const p = deliver(notice, { ...o, next: () => turn++, deadline: () => deadline });
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };
  let n = 0;
  const loop = paced(
    o.rate,
    () => running,
    () => fire(n++),
  );
  return {
    sent,
    count: () => sent.filter((s) => s.answer?.status === 202).length,
    inFlight: () => pending.size,
    stop: async (settleMs) => {
      running = false;
      await loop;
      deadline = Date.now() + settleMs;
      await Promise.all([...pending]);
      return sent.filter((s) => !s.answer).length;
    },
  };
}

type DeliverOptions = SendOptions & { next: () => number; deadline: () => number };

/** Sends one notice until a definite answer or the deadline, each attempt to the next running replica. */
async function deliver(notice: SentNotice, o: DeliverOptions): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const urls = o.urls();
    const url = urls[o.next() % urls.length];
    const result = await o.attempt(() =>
      postJson(`${url}/v1/notifications`, o.token, notice.key, notice.body, CLIENT_TIMEOUT_MS),
    );
    notice.attempts = attempt + 1;
    if (attempt === 0) {
      notice.ms = result.ms;
      notice.first = result.answer ? `${result.answer.status}` : (result.error ?? "error").split(":")[0] || "error";
    }
    if (result.answer && !retryable(result.answer.status)) {
      notice.answer = result.answer;
      return;
    }
    if (Date.now() >= o.deadline()) return;
    await Bun.sleep(retryPauseMs(attempt, Math.random, result.answer?.retryAfterS));
  }
}

const TICK_MS = 50;

/** Calls `fire` `rate` times a second, spread over ticks of 50 ms and kept to the clock, while `running()`. */
export async function paced(rate: number, running: () => boolean, fire: () => void): Promise<void> {
  const started = performance.now();
  for (let tick = 0; running(); tick++) {
    const due = Math.round(((tick + 1) * TICK_MS * rate) / 1000) - Math.round((tick * TICK_MS * rate) / 1000);
    for (let i = 0; i < due; i++) fire();
    const wait = started + (tick + 1) * TICK_MS - performance.now();
    if (wait > 0) await Bun.sleep(wait);
  }
}
