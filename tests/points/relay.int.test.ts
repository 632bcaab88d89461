// An executed reservation's PointsGranted outbox row, published by the one outbox relay: a PointsEvent on the
// points subject (its own stream), with Nats-Msg-Id = event id, while entitlement events keep their subject.
import { expect, setDefaultTimeout, test } from "bun:test";
import { fromBinary } from "@bufbuild/protobuf";
import { EventEncodingError, encodeOutboxEvent } from "../../src/entitlement/work/outbox/encode.ts";
import { ensureEntitlementStream } from "../../src/entitlement/work/outbox/stream.ts";
import { PointsEvent_EventType, PointsEventSchema } from "../../src/gen/points_event_pb.ts";
import { insertEvent, makeRelay, readStream, useFixture } from "../entitlement/outbox.helpers.ts";
import { createReplica, reserve } from "./helpers.ts";

setDefaultTimeout(90_000);

const f = useFixture("ptsrelay");

test("PointsGranted is published as a PointsEvent on the points stream; entitlement events stay where they were", async () => {
  const pointsStream = `${f.stream}_points`;
  const pointsSubject = `${pointsStream}.events`;
  await ensureEntitlementStream(f.jsm, {
    stream: pointsStream,
    subject: pointsSubject,
    duplicateWindowMs: 120_000,
    replicas: 1,
  });
  try {
    const id = await reserve(f.sql, { userId: "u_pts", amount: 40, executeAt: new Date(Date.now() - 1) });
    await reserve(f.sql, { userId: "u_pts", amount: 2, executeAt: new Date(Date.now() - 1) });
    const grant = await insertEvent(f.sql, { userId: "u_ent", sku: "sku" });
    const scheduler = createReplica(f.sql, "s1", {}, { subject: pointsSubject }).scheduler;
    expect(await scheduler.runOnce()).toMatchObject({ executed: 2 });

    const report = await makeRelay(f).runOnce();
    expect(report).toMatchObject({ claimed: 3, published: 3, failed: 0 });

    const entitlementMessages = await readStream(f.jsm, f.stream);
    expect(
      entitlementMessages.map((m) => m.msgId),
      "only the entitlement event is on its subject",
    ).toEqual([grant]);
    const points = await readStream(f.jsm, pointsStream);
    expect(points).toHaveLength(2);
    const events = points.map((m) => fromBinary(PointsEventSchema, m.data));
    const first = events.find((e) => e.reservationId === id);
    expect(first).toMatchObject({
      eventType: PointsEvent_EventType.POINTS_GRANTED,
      userId: "u_pts",
      pointAmount: 40n,
    });
    // The two grants ran in either order: the later one's balance_after is the sum, the earlier one's its amount.
    const balances = events.map((e) => e.balanceAfter).sort((x, y) => Number(x - y));
    expect(
      [
        [2n, 42n],
        [40n, 42n],
      ],
      "balance_after is the running balance",
    ).toContainEqual(balances);
    const message = points.find((m) => fromBinary(PointsEventSchema, m.data).reservationId === id);
    expect(message?.headers).toMatchObject({ event_type: "PointsGranted", aggregate_key: "u_pts" });
    expect(message?.msgId).toBe(first?.eventId as string);
  } finally {
    await f.jsm.streams.delete(pointsStream).catch(() => false);
  }
});

test("a PointsGranted row without a subject is never sent to the entitlement subject", () => {
  const row = {
    eventId: "0b7e4b4e-7a51-4f8c-9d1e-1f6a1c3c2b11",
    eventType: "PointsGranted",
    aggregateKey: "u",
    payload: {},
    attemptCount: 1,
    subject: null,
  };
  expect(() => encodeOutboxEvent(row)).toThrow(EventEncodingError);
});
