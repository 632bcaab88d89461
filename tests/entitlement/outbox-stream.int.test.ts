// Stream bootstrap (docs/events.md, docs/decisions.md): Entitlement creates its stream when missing and puts its
// subject and duplicate window back when they drifted, leaving every other setting alone.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ensureEntitlementStream, validateStreamSettings } from "../../src/entitlement/work/outbox/stream.ts";
import { natsUrl, uniqueName } from "../support/infra.ts";

// Real PostgreSQL and NATS on a loaded 2-core CI machine: waits are polled, but the whole test may take a while.
setDefaultTimeout(90_000);

let nc: NatsConnection;
let jsm: JetStreamManager;
const stream = uniqueName("ev_stream");
const subject = `${stream}.events`;

beforeAll(async () => {
  nc = await connect({ servers: await natsUrl() });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await jsm.streams.delete(stream).catch(() => false);
  await nc.close();
});

test("creates the stream when missing, then leaves it unchanged, then repairs a drifted window", async () => {
  const settings = { stream, subject, duplicateWindowMs: 120_000, replicas: 1 };
  expect(await ensureEntitlementStream(jsm, settings)).toBe("created");
  const created = await jsm.streams.info(stream);
  expect(created.config.subjects).toEqual([subject]);
  expect(created.config.duplicate_window, "nanoseconds").toBe(120_000_000_000);
  expect(created.config.num_replicas).toBe(1);

  expect(await ensureEntitlementStream(jsm, settings)).toBe("unchanged");

  await jsm.streams.update(stream, { ...created.config, duplicate_window: 5_000_000_000, max_msgs: 1000 });
  expect(await ensureEntitlementStream(jsm, settings)).toBe("updated");
  const repaired = await jsm.streams.info(stream);
  expect(repaired.config.duplicate_window).toBe(120_000_000_000);
  expect(repaired.config.max_msgs, "settings Entitlement does not own are kept").toBe(1000);

  expect(await ensureEntitlementStream(jsm, { ...settings, duplicateWindowMs: 60_000 })).toBe("updated");
  expect((await jsm.streams.info(stream)).config.duplicate_window).toBe(60_000_000_000);
});

test("invalid settings are refused before JetStream is asked", () => {
  const valid = { stream, subject, duplicateWindowMs: 1, replicas: 1 };
  expect(() => validateStreamSettings({ ...valid, stream: " " })).toThrow("stream name");
  expect(() => validateStreamSettings({ ...valid, stream: "a.b" })).toThrow("stream name");
  expect(() => validateStreamSettings({ ...valid, subject: "" })).toThrow("subject");
  expect(() => validateStreamSettings({ ...valid, duplicateWindowMs: 0 })).toThrow("duplicate window");
  expect(() => validateStreamSettings({ ...valid, replicas: 0 })).toThrow("replicas");
  expect(() => validateStreamSettings({ ...valid, replicas: 6 })).toThrow("replicas");
});
