// The reconnect delay of the PostgreSQL pool (src/shared/db.ts).
import { expect, test } from "bun:test";
import { reconnectDelaySeconds } from "../../src/shared/db.ts";

test("the reconnect delay grows with failures but never beyond 1s, so a pool is back soon after its database", () => {
  expect(reconnectDelaySeconds(0, () => 1)).toBeCloseTo(0.05);
  expect(reconnectDelaySeconds(3, () => 1)).toBeCloseTo(0.4);
  for (const retries of [5, 10, 50, 1000]) {
    expect(
      reconnectDelaySeconds(retries, () => 1),
      `after ${retries} failures`,
    ).toBe(1);
    expect(
      reconnectDelaySeconds(retries, () => 0),
      "jitter halves it at most",
    ).toBe(0.5);
  }
});
