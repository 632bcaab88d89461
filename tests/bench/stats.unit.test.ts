// The benches' summaries: a median is the middle of the values whatever their order, the mean of the two middle ones
// for an even count (a build's rounds alternate, so two or four is common), and nothing for no values.
import { expect, test } from "bun:test";
import { median, summarize } from "./stats.ts";

test("a median is the middle value, or the mean of the two middle ones, in any order", () => {
  expect(median([0.8, 0.57, 0.64])).toBe(0.64);
  expect(median([0.69, 0.56, 0.8, 0.66])).toBeCloseTo(0.675, 10);
  expect(median([3])).toBe(3);
  expect(median([])).toBeNaN();
});

test("summarize takes percentiles by nearest rank", () => {
  const s = summarize([5, 1, 4, 2, 3]);
  expect(s).toEqual({ p50: 3, p95: 5, p99: 5, max: 5, n: 5 });
});
