import { expect, test } from "bun:test";
import pino from "pino";
import { periodicWorker, untilShortBatch } from "../../src/shared/periodic.ts";

test("untilShortBatch runs until a batch comes back short and returns the total", async () => {
  const sizes = [3, 3, 1, 3];
  const limits: number[] = [];
  const total = await untilShortBatch(async (limit) => {
    limits.push(limit);
    return sizes.shift() ?? 0;
  }, 3);
  expect(total).toBe(7);
  expect(limits, "stops after the first short batch").toEqual([3, 3, 3]);
});

test("untilShortBatch stops on abort even when batches stay full", async () => {
  const controller = new AbortController();
  let calls = 0;
  const total = await untilShortBatch(
    async (limit) => {
      if (++calls === 2) controller.abort();
      return limit;
    },
    5,
    controller.signal,
  );
  expect([calls, total]).toEqual([2, 10]);
});

test("periodicWorker never dies: the first failure of a run is logged once, the recovery once", async () => {
  const lines: { msg: string; failed_runs?: number }[] = [];
  const log = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const outcomes = ["fail", "fail", "fail", "ok", "ok"];
  const controller = new AbortController();
  let runs = 0;
  const worker = periodicWorker({
    name: "job",
    intervalMs: 1,
    log,
    once: async () => {
      runs++;
      const outcome = outcomes.shift();
      if (outcome === undefined) controller.abort();
      if (outcome === "fail") throw new Error("database down");
    },
  });
  await worker.run(controller.signal);
  expect(runs).toBe(6);
  expect(lines.map((l) => l.msg)).toEqual(["job failed; retrying at the next interval", "job works again"]);
  expect(lines[1]?.failed_runs).toBe(3);
});
