// What the API said, checked against what the load's model says it must say. Pure: no I/O.
import { type Answer, finalAnswer } from "./client.ts";
import type { Recorded } from "./load.ts";

/** Statuses a fault may produce besides the model's 200/409: 503 NOT_READY and 500 INTERNAL_ERROR, both enveloped. */
const FAULT_CODES: Record<number, string> = { 500: "INTERNAL_ERROR", 503: "NOT_READY" };

export type AnswerReport = {
  requests: number;
  /** Fresh requests whose final answer (own or settled) is 200: the changes that must reach a notification. */
  accepted: Recorded[];
  unanswered: number;
  faults: number;
  maxLatencyMs: number;
  problems: string[];
};

function describe(r: Recorded, a: Answer | undefined): string {
  const got = a ? `${a.status} ${a.text.slice(0, 160)}` : `no answer (${r.error ?? "?"})`;
  return `${r.kind} ${r.action} ${r.body.user_id}/${r.body.stock_keeping_unit} key ${r.key.slice(-12)}: ${got}`;
}

function mismatch(r: Recorded, a: Answer): string | undefined {
  const e = r.expect;
  if (e.same) {
    return a.status === e.same.status && Bun.deepEquals(a.body, e.same.body)
      ? undefined
      : `replay differs from the original ${e.same.status} ${e.same.text.slice(0, 160)}`;
  }
  if (a.status !== e.status) return `expected ${e.status}${e.code ? ` ${e.code}` : ""}`;
  if (e.code && a.body.code !== e.code) return `expected code ${e.code}`;
  if (a.status === 200 && e.version !== undefined && Number(a.body.version) !== e.version)
    return `expected version ${e.version}`;
  return undefined;
}

export function checkAnswers(sent: Recorded[], latencyBoundMs: number): AnswerReport {
  const problems: string[] = [];
  const note = (what: string) => {
    if (problems.length < 12) problems.push(what);
    else if (problems.length === 12) problems.push("… (more problems not shown)");
  };
  let unanswered = 0;
  let faults = 0;
  let maxLatencyMs = 0;
  for (const r of sent) {
    maxLatencyMs = Math.max(maxLatencyMs, r.ms);
    if (r.ms > latencyBoundMs) note(`took ${Math.round(r.ms)}ms (bound ${latencyBoundMs}ms): ${describe(r, r.answer)}`);
    if (!r.answer) unanswered++;
    else if (r.answer.status >= 500) {
      faults++;
      if (FAULT_CODES[r.answer.status] !== r.answer.body.code) note(`unexpected 5xx: ${describe(r, r.answer)}`);
    }
    // A poison request is refused at the edge, before any database work: whatever the fault, its answer is 400.
    const a =
      r.kind === "fresh"
        ? finalAnswer(r)
        : r.kind === "poison" || (r.answer && r.answer.status < 500)
          ? r.answer
          : undefined;
    if (r.kind === "fresh" && !a) note(`never settled: ${describe(r, r.answer)}`);
    if (!a) continue;
    const wrong = mismatch(r, a);
    if (wrong) note(`${wrong}: ${describe(r, a)}`);
  }
  const accepted = sent.filter((r) => r.kind === "fresh" && finalAnswer(r)?.status === 200);
  return { requests: sent.length, accepted, unanswered, faults, maxLatencyMs, problems };
}
