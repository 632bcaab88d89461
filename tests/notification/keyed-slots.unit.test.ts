// Slots per destination: a destination that got every slot it was offered wakes the loop once half its slots are
// free again; one that got fewer (nothing more due) or frees nothing (hanging) never does.
import { expect, test } from "bun:test";
import { createKeyedSlots } from "../../src/notification/work/keyed-slots.ts";

function slotsOf(cap: number) {
  let wakes = 0;
  const slots = createKeyedSlots(cap, () => wakes++);
  return { slots, wakes: () => wakes };
}

test("a destination that got all its slots wakes the loop once half of them are free, and once only", () => {
  const { slots, wakes } = slotsOf(4);
  slots.took(slots.offer(), ["a", "a", "a", "a"]);
  expect(slots.offer()).toEqual([{ key: "a", free: 0 }]);
  slots.release("a");
  expect(wakes()).toBe(0);
  slots.release("a");
  expect(wakes()).toBe(1);
  slots.release("a");
  slots.release("a");
  expect(wakes()).toBe(1);
  expect(slots.offer()).toEqual([]);
});

test("a destination that got fewer than offered has nothing more due: its releases wake nobody", () => {
  const { slots, wakes } = slotsOf(4);
  slots.took(slots.offer(), ["a", "a", "b", "b", "b", "b"]);
  for (let i = 0; i < 2; i++) slots.release("a");
  expect(wakes()).toBe(0);
  slots.release("b");
  slots.release("b");
  expect(wakes(), "b got all four of its slots").toBe(1);
});

test("what was offered counts, not what is in flight when the claim returns", () => {
  const { slots, wakes } = slotsOf(4);
  slots.took(slots.offer(), ["a", "a"]);
  const offered = slots.offer();
  expect(offered).toEqual([{ key: "a", free: 2 }]);
  // Both end while the claim runs; the claim then takes the two offered: all of them.
  slots.release("a");
  slots.release("a");
  slots.took(offered, ["a", "a"]);
  expect(wakes()).toBe(0);
  slots.release("a");
  expect(wakes()).toBe(1);
});
