// notification_nats_dlq is keyed by (stream, stream_seq): a sequence number is unique only within its stream.
import { expect, test } from "bun:test";
import { insertNatsDlqEntry } from "../../src/notification/intake/advisories/queries.ts";
import { useTestDatabase } from "../support/infra.ts";

const f = useTestDatabase("nats_dlq_q", { service: "notification", poolMax: 2 });

const entry = (stream: string | null, kind: "MAX_DELIVERIES" | "MSG_TERMINATED" = "MAX_DELIVERIES") => ({
  streamSeq: 42,
  stream,
  consumer: "c",
  kind,
  deliveries: 10,
});

test("the same sequence in two streams is two rows; the same message twice is one", async () => {
  const now = new Date();
  expect(await insertNatsDlqEntry(f.sql, entry("stream-a"), now)).toBe(1);
  expect(await insertNatsDlqEntry(f.sql, entry("stream-b"), now), "another stream's message 42 is kept").toBe(1);
  expect(await insertNatsDlqEntry(f.sql, entry("stream-a", "MSG_TERMINATED"), now), "a redelivered advisory").toBe(0);
  expect(await insertNatsDlqEntry(f.sql, entry(null), now), "an advisory without a stream name").toBe(1);
  const rows = await f.sql`select stream, stream_seq::int as seq from notification_nats_dlq order by stream`;
  expect([...rows]).toEqual([
    { stream: "", seq: 42 },
    { stream: "stream-a", seq: 42 },
    { stream: "stream-b", seq: 42 },
  ]);
});
