// A pgbench run that measured nothing is reported with pgbench's own words instead of a throughput of NaN or 0.
import { describe, expect, test } from "bun:test";
import { whyUnmeasured } from "./pgbench.ts";

describe("whyUnmeasured", () => {
  test("a run with a throughput has no reason", () => {
    expect(whyUnmeasured(0, 512.3, "tps = 512.3 (without initial connection time)", "")).toBeUndefined();
  });

  test("a failed run carries pgbench's exit code and its last error lines", () => {
    const stderr = [
      "pgbench: error: connection to server at 127.0.0.1, port 5433 failed: FATAL:  sorry, too many clients already",
      "pgbench: error: could not create connection for client 61",
    ].join("\n");
    expect(whyUnmeasured(1, Number.NaN, "", stderr)).toBe(
      "pgbench exited 1: pgbench: error: connection to server at 127.0.0.1, port 5433 failed: FATAL:  sorry, too " +
        "many clients already | pgbench: error: could not create connection for client 61",
    );
  });

  test("a run that finished no transaction says so", () => {
    const stdout = "number of transactions actually processed: 0\ntps = 0.000000 (without initial connection time)";
    expect(whyUnmeasured(0, 0, stdout, "")).toBe(
      "pgbench measured no throughput: number of transactions actually processed: 0",
    );
  });
});
