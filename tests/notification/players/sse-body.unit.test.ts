// A stream's body: a queue bounded in bytes between what the stream writes and what its client reads. The stream
// writes while there is room and then waits; a reader that leaves the buffer full for the stall time has stopped
// reading.
import { describe, expect, test } from "bun:test";
import { createSseBody } from "../../../src/notification/features/players/sse-body.ts";

const chunk = (bytes: number) => new Uint8Array(bytes);

/** Resolves with the outcome of `room()`, or "pending" if it has not settled within `ms`. */
const settledWithin = (room: Promise<boolean>, ms: number) =>
  Promise.race([room, Bun.sleep(ms).then(() => "pending" as const)]);

describe("the stream's body", () => {
  test("has room until the bytes queued reach the buffer, and again once the reader takes them", async () => {
    const out = createSseBody(4_096, 10_000, () => {});
    out.write(chunk(2_048));
    expect(await out.room(), "2 KiB of 4 queued").toBe(true);
    out.write(chunk(2_048));
    const room = out.room();
    expect(await settledWithin(room, 50), "the buffer is full").toBe("pending");
    const reader = out.body.getReader();
    await reader.read();
    await reader.read();
    expect(await settledWithin(room, 1_000), "the reader took everything").toBe(true);
  });

  test("a reader that takes nothing for the stall time is reported stalled", async () => {
    const out = createSseBody(4_096, 100, () => {});
    out.write(chunk(8_192));
    expect(await settledWithin(out.room(), 2_000)).toBe(false);
  });

  test("a reader that takes the queue below the buffer, not all of it, within the stall time is not stalled", async () => {
    const out = createSseBody(4_096, 300, () => {});
    for (let i = 0; i < 8; i++) out.write(chunk(1_024));
    const room = out.room();
    const reader = out.body.getReader();
    for (let i = 0; i < 5; i++) await reader.read();
    expect(await settledWithin(room, 2_000), "3 KiB of 4 left queued: room").toBe(true);
  });

  test("ended, it has room at once (the writer then finds the stream closed)", async () => {
    const out = createSseBody(4_096, 10_000, () => {});
    out.write(chunk(8_192));
    const room = out.room();
    out.end(false);
    expect(await settledWithin(room, 1_000)).toBe(true);
  });
});
