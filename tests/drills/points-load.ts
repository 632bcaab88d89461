// Point reservations in the drill's load: one worker reserves points for a few users of its own prefix (so balances
// add up over several executions, some of them in one batch), half of them due at once (an execute_at already past
// means "as soon as possible") and half 1–4 s ahead, so executions fall due on both replicas while the fault is on.
// One request in ten replays an earlier one (same key and body), which must get the original answer back. A request
// left without a definite answer is settled by replaying it; points-ledger.ts then checks the tables.
import { type Answer, postJson } from "./client.ts";

const USERS = 5;
const REPLAY_SHARE = 0.1;
const TIMEOUT_MS = 15_000;

export type ReservationBody = { user_id: string; point_amount: number; execute_at: string; reason: string };

export type Reservation = {
  key: string;
  body: ReservationBody;
  ms: number;
  /** Undefined: not answered (a replica down, a client-side timeout). */
  answer?: Answer;
  error?: string;
  /** For a reservation not answered, or answered 5xx: the answer of its idempotent replay. */
  settled?: Answer;
};

/** A replay sent during the load: the same key and body as `original`, whose definite answer it must repeat. */
export type Replay = { original: Reservation; answer?: Answer; ms: number };

export type PointsLoad = { reservations: Reservation[]; replays: Replay[]; stop: () => Promise<void> };

export const definite = (a: Answer | undefined): a is Answer => a !== undefined && a.status < 500;

export const post = (url: string, token: string, r: Reservation, timeoutMs = TIMEOUT_MS) =>
  postJson(`${url}/v1/points/reservations`, token, r.key, r.body, timeoutMs);

/** Now (or a moment ago: the API reads a past instant as now), or 1–4 s ahead. */
function executeAt(random: () => number): string {
  const r = random();
  const offsetMs = r < 0.25 ? -2_000 * random() : r < 0.5 ? 0 : 1_000 + 3_000 * random();
  return new Date(Date.now() + offsetMs).toISOString();
}

export function startPointsLoad(o: {
  prefix: string;
  urls: () => string[];
  token: string;
  pauseMs: number;
  random: () => number;
}): PointsLoad {
  const reservations: Reservation[] = [];
  const replays: Replay[] = [];
  let stopped = false;
  const run = async () => {
    for (let n = 0; !stopped; n++) {
      const urls = o.urls();
      const url = urls[n % urls.length] as string;
      const answered = reservations.filter((r) => definite(r.answer));
      let answer: Answer | undefined;
      if (answered.length > 0 && o.random() < REPLAY_SHARE) {
        const original = answered[Math.floor(o.random() * answered.length)] as Reservation;
        const result = await post(url, o.token, original);
        replays.push({ original, answer: result.answer, ms: result.ms });
        answer = result.answer;
      } else {
        const body = {
          user_id: `${o.prefix}u${n % USERS}`,
          point_amount: 1 + Math.floor(o.random() * 1_000),
          execute_at: executeAt(o.random),
          reason: "drill",
        };
        const reservation: Reservation = { key: `${o.prefix}r${n}-${crypto.randomUUID()}`, body, ms: 0 };
        Object.assign(reservation, await post(url, o.token, reservation));
        reservations.push(reservation);
        answer = reservation.answer;
      }
      await Bun.sleep((answer ? 0 : 250) + o.pauseMs * (0.5 + o.random()));
    }
  };
  const running = run();
  return {
    reservations,
    replays,
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

/** Replays every reservation without a definite answer (same key and body) until it has one or the deadline passes. */
export async function settleReservations(
  load: PointsLoad,
  o: { urls: () => string[]; token: string; deadline: number },
): Promise<void> {
  for (const r of load.reservations.filter((r) => !definite(r.answer))) {
    while (!definite(r.settled) && Date.now() < o.deadline) {
      const urls = o.urls();
      r.settled = (await post(urls[0] as string, o.token, r, 10_000)).answer;
      if (!definite(r.settled)) await Bun.sleep(250);
    }
  }
}
