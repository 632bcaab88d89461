// Settling what the drill could not know: a request that got no answer (or a 5xx) may or may not have committed. A
// payment system retries it with the same Idempotency-Key and body until it gets a definite answer; so does the drill.
import { type Answer, definite, needsSettling, send } from "./client.ts";
import type { Recorded } from "./load.ts";

/**
 * Replays every unsettled fresh request until a definite answer (not 5xx, not 429) or the deadline, waiting at least
 * what a Retry-After asked; returns how many stay open.
 */
export async function settleUnanswered(
  sent: Recorded[],
  options: { urls: () => string[]; token: string; timeoutMs: number },
): Promise<number> {
  const open = sent.filter(needsSettling);
  const deadline = Date.now() + options.timeoutMs;
  let turn = 0;
  const settleOne = async (record: Recorded) => {
    while (Date.now() < deadline) {
      const urls = options.urls();
      const url = urls[turn++ % Math.max(1, urls.length)];
      const answer: Answer | undefined = url ? (await send(url, options.token, record, 10_000)).answer : undefined;
      if (definite(answer)) {
        record.settled = answer;
        return;
      }
      await Bun.sleep(Math.max(250, Math.min(60, answer?.retryAfterS ?? 0) * 1000));
    }
  };
  for (let i = 0; i < open.length; i += 8) await Promise.all(open.slice(i, i + 8).map(settleOne));
  return open.filter((r) => !r.settled).length;
}
