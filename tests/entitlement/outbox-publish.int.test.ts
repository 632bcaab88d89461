// The publisher's cases, as the Java original tested them with mocks, with real rows and a real stream.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { fromBinary } from "@bufbuild/protobuf";
import { EntitlementEventSchema } from "../../src/gen/entitlement_event_pb.ts";
import {
  failingFirst,
  insertEvent,
  makeRelay,
  metricValue,
  readEvent,
  readStream,
  streamCount,
  useFixture,
} from "./outbox.helpers.ts";

// Real PostgreSQL and NATS on a loaded 2-core CI machine: waits are polled, but the whole test may take a while.
setDefaultTimeout(90_000);

const f = useFixture("publish");

describe("publisher cases", () => {
  test("a poison event ends FAILED at once with its error and does not hold back the others", async () => {
    const t = Date.now();
    const a = await insertEvent(f.sql, { createdAt: new Date(t - 3000) });
    const poison = await insertEvent(f.sql, { createdAt: new Date(t - 2000), eventType: "EntitlementPaused" });
    const c = await insertEvent(f.sql, { createdAt: new Date(t - 1000) });
    const relay = makeRelay(f);
    expect(await relay.runOnce()).toEqual({ claimed: 3, published: 2, retried: 0, failed: 1, lost: 0 });
    expect(await readEvent(f.sql, poison)).toMatchObject({
      status: "FAILED",
      attempt_count: 10,
      last_error: 'outbox payload invalid: unknown event_type "EntitlementPaused"',
    });
    expect(
      (await readStream(f.jsm, f.stream)).map((m) => m.msgId),
      "the others, in created_at order",
    ).toEqual([a, c]);
    expect(await metricValue(relay.registry, "entitlement_outbox_publish_total", { result: "failed" })).toBe(1);
  });

  test("a row stored with CR/LF in its ids is still published, its headers percent-encoded", async () => {
    // Rows the API accepted before it refused control characters: NATS refuses CR and LF in a header value, so
    // before the headers were encoded this event failed every attempt and ended FAILED.
    const id = await insertEvent(f.sql, { userId: "u\r\n1", sku: "sku\u001b[31m" });
    expect(await makeRelay(f).runOnce()).toMatchObject({ published: 1, failed: 0, retried: 0 });
    expect((await readEvent(f.sql, id)).status).toBe("PUBLISHED");
    const [message] = await readStream(f.jsm, f.stream);
    expect(message?.headers.aggregate_key, "control characters percent-encoded, the rest as stored").toBe(
      "u%0D%0A1:sku%1B[31m",
    );
    expect(fromBinary(EntitlementEventSchema, message?.data ?? new Uint8Array()).userId, "the body keeps the id").toBe(
      "u\r\n1",
    );
  });

  test("a missing PubAck is a retryable failure", async () => {
    const id = await insertEvent(f.sql);
    const relay = makeRelay(f, { js: { publish: async () => null as never } });
    expect(await relay.runOnce()).toMatchObject({ retried: 1 });
    expect(await readEvent(f.sql, id)).toMatchObject({
      status: "PENDING",
      attempt_count: 1,
      last_error: "puback is missing",
    });
  });

  test("a long error is stored cut to ENTITLEMENT_OUTBOX_ERROR_MESSAGE_MAX_LENGTH", async () => {
    const id = await insertEvent(f.sql);
    const relay = makeRelay(f, { js: failingFirst(f.js, 1, () => new Error("x".repeat(1005))) });
    await relay.runOnce();
    expect((await readEvent(f.sql, id)).last_error).toBe("x".repeat(1000));
  });

  test("a lease lost during the batch leaves that row to its new owner and finalizes the rest", async () => {
    const t = Date.now();
    const stolen = await insertEvent(f.sql, { createdAt: new Date(t - 2000) });
    const kept = await insertEvent(f.sql, { createdAt: new Date(t - 1000) });
    let once = false;
    const relay = makeRelay(f, {
      js: {
        publish: async (...args) => {
          if (!once) {
            once = true;
            await f.sql`update outbox_events set locked_by = 'new-owner' where event_id = ${stolen}`;
          }
          return f.js.publish(...args);
        },
      },
    });
    expect(await relay.runOnce()).toEqual({ claimed: 2, published: 1, retried: 0, failed: 0, lost: 1 });
    expect(await readEvent(f.sql, stolen)).toMatchObject({ status: "IN_FLIGHT", locked_by: "new-owner" });
    expect((await readEvent(f.sql, kept)).status).toBe("PUBLISHED");
    expect(await streamCount(f.jsm, f.stream), "both were published").toBe(2);
  });

  test("failures while NATS is disconnected give their attempt back", async () => {
    const id = await insertEvent(f.sql, { attemptCount: 4 });
    let connected = true;
    const relay = makeRelay(f, {
      isConnected: () => connected,
      js: {
        publish: async () => {
          connected = false;
          throw new Error("CONNECTION_CLOSED");
        },
      },
    });
    expect((await relay.runOnce()).claimed).toBe(1);
    expect(await readEvent(f.sql, id)).toMatchObject({
      status: "PENDING",
      attempt_count: 4,
      next_retry_at: null,
      last_error: "NATS disconnected: CONNECTION_CLOSED",
    });
  });
});
