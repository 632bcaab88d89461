import { expect, test } from "bun:test";
import type { JsMsg } from "@nats-io/jetstream";
import { createQueue, progressEveryMs, trackInHand } from "../../src/notification/intake/nats/in-hand.ts";

function message() {
  const calls = { working: 0 };
  return { message: { working: () => calls.working++ } as unknown as JsMsg, calls };
}

test("every message in hand is kept in progress well within the ack wait until it is released", async () => {
  const inHand = trackInHand(300);
  const [a, b] = [message(), message()];
  inHand.add(a.message);
  inHand.add(b.message);
  await Bun.sleep(350);
  expect(a.calls.working, "signalled about three times per ack wait").toBeGreaterThanOrEqual(2);
  inHand.release([a.message]);
  const [aBefore, bBefore] = [a.calls.working, b.calls.working];
  await Bun.sleep(250);
  expect(a.calls.working, "a released message is signalled no more").toBe(aBefore);
  expect(b.calls.working, "the one still in hand is").toBeGreaterThan(bBefore);
  inHand.clear();
  expect(inHand.size()).toBe(0);
});

test("an idle reader runs no timer: nothing in hand, nothing signalled", async () => {
  const inHand = trackInHand(300);
  const a = message();
  inHand.add(a.message);
  inHand.release([a.message]);
  await Bun.sleep(250);
  expect(a.calls.working).toBe(0);
});

test("a connection that is gone does not stop the signals of the other messages", async () => {
  const inHand = trackInHand(300);
  const broken = {
    working: () => {
      throw new Error("closed");
    },
  } as unknown as JsMsg;
  const ok = message();
  inHand.add(broken);
  inHand.add(ok.message);
  await Bun.sleep(250);
  expect(ok.calls.working).toBeGreaterThanOrEqual(1);
  inHand.clear();
});

test("signals come at least three times per ack wait, never more often than every 100 ms", () => {
  expect(progressEveryMs(3_000)).toBe(1_000);
  expect(progressEveryMs(30_000)).toBe(10_000);
  expect(progressEveryMs(1)).toBe(100);
});

test("the queue hands out what was pushed in order, then ends once drained", async () => {
  const queue = createQueue<number>();
  queue.push(1);
  queue.push(2);
  const out: number[] = [];
  const reading = (async () => {
    for await (const n of queue) out.push(n);
  })();
  await Bun.sleep(5);
  queue.push(3);
  queue.end();
  queue.push(4);
  await reading;
  expect(out, "pushed after the end is dropped").toEqual([1, 2, 3]);
});
