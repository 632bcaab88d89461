import { describe, expect, test } from "bun:test";
import { createReadiness } from "../../src/shared/readiness.ts";

function probeCounting(result: () => Promise<void> = async () => {}) {
  const p = {
    calls: 0,
    probe: () => {
      p.calls++;
      return result();
    },
  };
  return p;
}

describe("readiness", () => {
  test("one probe answers every call within a second, concurrent ones included", async () => {
    let t = 0;
    const p = probeCounting();
    const r = createReadiness(p.probe, { now: () => t });
    await Promise.all(Array.from({ length: 100 }, () => r.check()));
    for (let i = 0; i < 100; i++) await r.check();
    expect(p.calls, "a flood of /readyz costs one database round trip").toBe(1);
    t = 999;
    await r.check();
    expect(p.calls).toBe(1);
    t = 1_000;
    await r.check();
    expect(p.calls, "probed again once the answer is a second old").toBe(2);
  });

  test("a failed probe is cached too, and the service is ready again once the probe succeeds", async () => {
    let t = 0;
    let up = false;
    const p = probeCounting(async () => {
      if (!up) throw new Error("database did not answer");
    });
    const r = createReadiness(p.probe, { now: () => t });
    expect(r.check()).rejects.toThrow("database did not answer");
    await expect(r.check()).rejects.toThrow("database did not answer");
    expect(p.calls).toBe(1);
    up = true;
    t = 1_500;
    await r.check();
    expect(p.calls).toBe(2);
  });

  test("a failure a request reported makes it not ready for holdMs, whatever the probe says", async () => {
    let t = 0;
    const r = createReadiness(async () => {}, { now: () => t, holdMs: 5_000 });
    await r.check();
    r.reportUnavailable(Object.assign(new Error("sorry, too many clients already"), { code: "53300" }));
    await expect(r.check()).rejects.toThrow("too many clients");
    t = 4_999;
    await expect(r.check()).rejects.toThrow("too many clients");
    t = 5_000;
    await r.check();
  });

  test("a probe that never answers fails within timeoutMs, and is not started again while it is pending", async () => {
    let t = 0;
    let release: (() => void) | undefined;
    // The first probe hangs until released (a database that accepted the connection and went silent); later ones answer.
    const p = probeCounting(() => (release ? Promise.resolve() : new Promise<void>((resolve) => (release = resolve))));
    const r = createReadiness(p.probe, { now: () => t, timeoutMs: 50 });
    const started = performance.now();
    await expect(r.check()).rejects.toThrow("did not answer within 50ms");
    const waited = performance.now() - started;
    expect(waited, "bounded by timeoutMs, not by the probe").toBeGreaterThanOrEqual(45);
    expect(waited).toBeLessThan(1_000);
    t = 1_000;
    await expect(r.check()).rejects.toThrow("did not answer within 50ms");
    expect(p.calls, "a hanging probe holds a connection: no second one while it is pending").toBe(1);
    release?.();
    await Bun.sleep(0);
    t = 2_000;
    await r.check();
    expect(p.calls, "once the hanging probe has answered, the next check probes afresh").toBe(2);
  });
});
