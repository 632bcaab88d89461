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
});
