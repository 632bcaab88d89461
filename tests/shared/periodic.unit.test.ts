import { describe, expect, test } from "bun:test";
import pino from "pino";
import { idleSleepMs, logDeleted, periodicWorker, untilNextMs, untilShortBatch } from "../../src/shared/periodic.ts";

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

test("untilShortBatch hands every batch of a run one Resume, and each run a fresh one", async () => {
  const seen: { resume: { from?: Date }; from?: Date }[] = [];
  const step = async (limit: number, resume: { from?: Date }) => {
    seen.push({ resume, from: resume.from });
    resume.from = new Date(seen.length);
    return seen.length % 2 === 1 ? limit : 0;
  };
  await untilShortBatch(step, 2);
  await untilShortBatch(step, 2);
  expect(seen[1]?.resume, "batches of one run resume where the last stopped").toBe(seen[0]?.resume);
  expect(seen[1]?.from, "the second batch starts at the first's mark").toEqual(new Date(1));
  expect(seen[2]?.resume, "a new run gets its own").not.toBe(seen[1]?.resume);
  expect(seen[2]?.from, "a new run starts from the beginning").toBeUndefined();
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

describe("idleSleepMs", () => {
  const p = { pollMs: 1_000, idleMs: 10_000 };
  test("until the next due time plus a millisecond, at most the idle interval", () => {
    expect(idleSleepMs(0, new Date(2_500), p)).toBe(2_501);
    expect(idleSleepMs(0, new Date(60_000), p)).toBe(10_000);
  });
  test("the idle interval without a next time; the poll interval when something is due already", () => {
    expect(idleSleepMs(0, undefined, p)).toBe(10_000);
    expect(idleSleepMs(5_000, new Date(5_000), p)).toBe(1_000);
  });
  test("a fixed poll when the idle interval is not above it", () => {
    expect(idleSleepMs(0, undefined, { pollMs: 1_000, idleMs: 1_000 })).toBe(1_000);
  });
});

describe("untilNextMs (the scheduler's sleep, which keeps due times inside the poll interval)", () => {
  const p = { capMs: 1_000, dueMs: 10 };
  test("until the next time plus a millisecond, at most the cap; the cap without a next time", () => {
    expect(untilNextMs(0, new Date(250), p)).toBe(251);
    expect(untilNextMs(0, new Date(5_000), p)).toBe(1_000);
    expect(untilNextMs(0, undefined, p)).toBe(1_000);
  });
  test("the due pause when the next time has come", () => {
    expect(untilNextMs(700, new Date(700), p)).toBe(10);
  });
});

test("periodicWorker hands `once` a log with its component; logDeleted speaks only when something went", async () => {
  const lines: { msg: string; component?: string; reservations?: number }[] = [];
  const log = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const controller = new AbortController();
  const counts = [0, 3];
  const worker = periodicWorker({
    name: "job",
    component: "points-retention",
    intervalMs: 1,
    log,
    once: async (_signal, jobLog) => {
      const reservations = counts.shift();
      if (reservations === undefined) return controller.abort();
      logDeleted(jobLog, { reservations }, "deleted");
    },
  });
  await worker.run(controller.signal);
  expect(lines).toEqual([expect.objectContaining({ msg: "deleted", component: "points-retention", reservations: 3 })]);
});

test("periodicWorker without a component logs under its name", async () => {
  const lines: { msg: string; component?: string }[] = [];
  const log = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const controller = new AbortController();
  const worker = periodicWorker({
    name: "history-partitions",
    intervalMs: 1,
    log,
    once: async (_signal, jobLog) => {
      jobLog.info("ran");
      controller.abort();
    },
  });
  await worker.run(controller.signal);
  expect(lines, "the component names the job").toEqual([
    expect.objectContaining({ msg: "ran", component: "history-partitions" }),
  ]);
});
