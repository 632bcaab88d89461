// Settling what the drill could not know: a request that got no answer (or a 5xx) may or may not have committed. A
// payment system retries it with the same Idempotency-Key and body until it gets a definite answer; so does the drill.
import { type Answer, needsSettling, send } from "./client.ts";
import type { Recorded } from "./load.ts";

/** Replays every unsettled fresh request until a definite answer (< 500) or the deadline; returns how many stay open. */
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
      if (answer && answer.status < 500) {
        record.settled = answer;
        return;
      }
      await Bun.sleep(250);
    }
  };
  for (let i = 0; i < open.length; i += 8) await Promise.all(open.slice(i, i + 8).map(settleOne));
  return open.filter((r) => !r.settled).length;
}
