// Percentiles and rates, shared by every phase.

/** The p-th percentile (0–100) by nearest rank; NaN for no samples. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

export function summarize(samples: number[]): { p50: number; p95: number; p99: number; max: number; n: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    n: sorted.length,
  };
}

/** The middle value, or the mean of the two middle ones; NaN for no values. */
export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/**
 * The harness's console lines, each after the seconds since `began`: `progress` always, `detail` (in-phase counters) at
 * most one line every 2s.
 */
export function progressLines(began = performance.now()) {
  const progress = (line: string) => console.log(`[bench ${((performance.now() - began) / 1000).toFixed(1)}s] ${line}`);
  let lastDetail = 0;
  const detail = (line: string) => {
    if (performance.now() - lastDetail < 2_000) return;
    lastDetail = performance.now();
    progress(`  ${line}`);
  };
  return { began, progress, detail };
}
