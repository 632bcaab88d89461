// The soak's figures minute by minute (grants and revokes: requests, answers, p99 latency; sends: requests, 202s, p99
// latency of their first attempt; each process's resident memory, the kill of the minute and the time from it to the
// next 200), printed as one line a minute while it runs and as a Markdown table at the end, both ready to paste.
import type { Recorded } from "../drills/load.ts";
import type { Kill } from "./chaos.ts";
import type { SentNotice } from "./sends.ts";

export type Minute = {
  minute: number;
  requests: number;
  ok: number;
  failed: number;
  /** Answers by status, and unanswered requests by the client's error ("TimeoutError", "ConnectionRefused"...). */
  outcomes: Record<string, number>;
  p99Ms: number;
  rssMb: Record<string, number | undefined>;
  kill?: string;
  firstOkMs?: number;
  sends: SendMinute;
};

export type SendMinute = { requests: number; accepted: number; p99Ms: number; outcomes: Record<string, number> };

export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

function countBy(keys: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const k of keys) counts[k] = (counts[k] ?? 0) + 1;
  return counts;
}

/** The figures of minute `minute` (1-based) of a run that started at `started`. */
export function minuteOf(
  sent: Recorded[],
  started: number,
  minute: number,
  kill?: Kill,
): Omit<Minute, "rssMb" | "sends"> {
  const from = started + (minute - 1) * 60_000;
  const inMinute = sent.filter((r) => r.startedAt >= from && r.startedAt < from + 60_000);
  const answered = inMinute.filter((r) => r.answer);
  const okEnds = kill
    ? sent.filter((r) => r.startedAt >= kill.at && r.answer?.status === 200).map((r) => r.startedAt + r.ms)
    : [];
  return {
    minute,
    requests: inMinute.length,
    ok: inMinute.filter((r) => r.answer?.status === 200).length,
    failed: inMinute.filter((r) => !r.answer || r.answer.status >= 500).length,
    outcomes: countBy(
      inMinute.map((r) => (r.answer ? `${r.answer.status}` : ((r.error ?? "pending").split(":")[0] ?? "pending"))),
    ),
    p99Ms: Math.round(
      quantile(
        answered.map((r) => r.ms),
        0.99,
      ),
    ),
    kill: kill ? `${kill.kind} (${kill.victim})` : undefined,
    firstOkMs: kill && okEnds.length > 0 ? Math.round(Math.min(...okEnds) - kill.at) : undefined,
  };
}

const mb = (v: number | undefined) => (v === undefined ? "down" : `${Math.round(v)}`);

/** The sends of minute `minute`: started in it, answered 202 in the end, p99 and outcomes of their first attempt. */
export function sendMinuteOf(sent: SentNotice[], started: number, minute: number): SendMinute {
  const from = started + (minute - 1) * 60_000;
  const inMinute = sent.filter((s) => s.startedAt >= from && s.startedAt < from + 60_000);
  const answered = inMinute.filter((s) => /^\d+$/.test(s.first));
  return {
    requests: inMinute.length,
    accepted: inMinute.filter((s) => s.answer?.status === 202).length,
    p99Ms: Math.round(
      quantile(
        answered.map((s) => s.ms),
        0.99,
      ),
    ),
    outcomes: countBy(inMinute.map((s) => s.first || "pending")),
  };
}

const outcomeText = (o: Record<string, number>) =>
  Object.entries(o)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");

/** The line a minute prints while the soak runs. */
export function progressLine(m: Minute, total: number, extra: { inFlight: number; reconnects: number }): string {
  const rss = Object.entries(m.rssMb)
    .map(([name, v]) => `${name} ${mb(v)}`)
    .join(", ");
  return (
    `minute ${m.minute}/${total}: changes ${m.requests} (${outcomeText(m.outcomes)}), p99 ${m.p99Ms} ms; ` +
    `sends ${m.sends.requests} (first answers ${outcomeText(m.sends.outcomes)}; 202 so far ${m.sends.accepted}), ` +
    `p99 ${m.sends.p99Ms} ms; RSS MiB ${rss}; kill ${m.kill ?? "none"}; ` +
    `${extra.inFlight} in flight, ${extra.reconnects} stream reconnects so far`
  );
}

export function formatMinutes(minutes: Minute[]): string {
  const names = Object.keys(minutes[0]?.rssMb ?? {});
  const head = ["min", "changes", "200", "5xx/none", "p99 ms", "sends", "202", "send p99 ms"];
  head.push(...names.map((n) => `RSS ${n} MiB`), "kill", "→ 200");
  const rows = minutes.map((m) => [
    `${m.minute}`,
    `${m.requests}`,
    `${m.ok}`,
    `${m.failed}`,
    `${m.p99Ms}`,
    `${m.sends.requests}`,
    `${m.sends.accepted}`,
    `${m.sends.p99Ms}`,
    ...names.map((n) => mb(m.rssMb[n])),
    m.kill ?? "—",
    m.firstOkMs === undefined ? "—" : `${(m.firstOkMs / 1000).toFixed(1)}s`,
  ]);
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join("\n");
}
