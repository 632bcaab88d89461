import { expect, test } from "bun:test";
import { inBatches } from "../../src/notification/intake/nats/pull.ts";

async function* source() {
  yield "a";
  yield "b";
  yield "c";
  await Bun.sleep(20);
  yield "d";
  yield "e";
}

async function collect(max: number): Promise<string[][]> {
  const out: string[][] = [];
  for await (const batch of inBatches(source(), max)) out.push(batch);
  return out;
}

test("a batch holds what is already buffered and never waits for more", async () => {
  expect(await collect(10)).toEqual([
    ["a", "b", "c"],
    ["d", "e"],
  ]);
});

test("a batch never exceeds its maximum, and nothing is lost or repeated", async () => {
  expect(await collect(2)).toEqual([["a", "b"], ["c"], ["d", "e"]]);
});
