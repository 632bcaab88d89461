// The relay as the service runs it (createOutboxWorker) against a NATS server of its own, started and killed by the
// test (the machine's shared NATS is never touched): NATS down at start, and NATS killed and restarted mid-stream.
// Neither may lose an event, put one in the stream twice, or use up attempts while NATS is away.
import { afterAll, beforeAll, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { Registry } from "prom-client";
import { createOutboxWorker } from "../../src/entitlement/work/outbox/worker.ts";
import { createWakeups } from "../../src/entitlement/work/wakeups.ts";
import type { Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { connectNats, createNatsLink, type NatsConnection } from "../../src/shared/nats.ts";
import { type DatabaseFixture, openTestDatabase } from "../support/infra.ts";
import { natsServerBinary, type PrivateNats, privateNats } from "../support/nats-server.ts";
import { waitUntil } from "../support/wait.ts";
import { countByStatus, insertEvent, insertEvents, readStream, settingsFor } from "./outbox.helpers.ts";

// Real PostgreSQL and NATS on a loaded 2-core CI machine: waits are polled, but the whole test may take a while.
setDefaultTimeout(90_000);

const NATS_SERVER = natsServerBinary;

let f: DatabaseFixture;
let sql: Sql;
let broker: PrivateNats;

beforeAll(async () => {
  f = await openTestDatabase("outbox_nats", { service: "entitlement", poolMax: 10 });
  sql = f.sql;
  if (NATS_SERVER) broker = privateNats("outbox-nats");
});
afterAll(async () => {
  await broker?.dispose();
  await f.close();
});
beforeEach(async () => {
  await f.reset();
});

const stream = "entitlement-events";
const subject = "entitlement.events";

function startWorker(nats: Promise<NatsConnection>) {
  const worker = createOutboxWorker({
    sql,
    link: createNatsLink(nats, silentLogger),
    log: silentLogger,
    now: () => new Date(),
    registry: new Registry(),
    workerId: "relay-under-test",
    wakeups: createWakeups({ sql, log: silentLogger, retryMs: 200 }),
    settings: settingsFor(subject, { pollIntervalMs: 200 }),
    stream: { stream, subject, duplicateWindowMs: 120_000, replicas: 1 },
  });
  const stop = new AbortController();
  const loop = worker.run(stop.signal);
  return {
    stop: async () => {
      stop.abort();
      await loop;
    },
  };
}

async function maxAttempts(): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select coalesce(max(attempt_count), 0)::int as n from outbox_events`;
  return row?.n ?? 0;
}

test.skipIf(!NATS_SERVER)(
  "NATS down at start: nothing is claimed; once it is up the stream is made and the backlog drains",
  async () => {
    const ids = await insertEvents(sql, 20);
    const nats = connectNats({ url: broker.url, connectionTimeoutMs: 1000, name: "t" }, silentLogger);
    const worker = startWorker(nats);
    await Bun.sleep(1_000); // the relay polls every 200 ms; give it several chances to misbehave
    expect(await countByStatus(sql), "nothing claimed while NATS is unreachable").toEqual({ PENDING: 20 });
    expect(await maxAttempts(), "no attempt used").toBe(0);

    await broker.start();
    const nc = await nats;
    await waitUntil(async () => (await countByStatus(sql)).PUBLISHED === 20, "backlog published after NATS came up");
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(stream);
    expect(info.config.duplicate_window, "created by the relay with the configured window").toBe(120_000 * 1_000_000);
    expect(new Set((await readStream(jsm, stream)).map((m) => m.msgId))).toEqual(new Set(ids));
    await worker.stop();
    await nc.close();
  },
);

test.skipIf(!NATS_SERVER)(
  "NATS killed and restarted mid-stream: every event reaches the stream exactly once",
  async () => {
    if (!broker.running()) await broker.start();
    const nats = connectNats({ url: broker.url, connectionTimeoutMs: 1000, name: "t" }, silentLogger);
    const nc = await nats;
    const jsm = await jetstreamManager(nc);
    await jsm.streams.purge(stream).catch(() => undefined);
    const worker = startWorker(nats);

    const ids: string[] = [];
    const produce = async (n: number) => {
      for (let i = 0; i < n; i++) {
        ids.push(await insertEvent(sql));
        await Bun.sleep(2);
      }
    };
    await produce(100);
    await broker.stop("SIGKILL");
    await produce(50);
    const duringOutage = ids.slice(100);
    await Bun.sleep(1_000); // the relay polls every 200 ms; give it several chances to misbehave
    const untouched = await sql<{ n: number }[]>`
    select count(*)::int as n from outbox_events
    where event_id = any(${duringOutage}::uuid[]) and status = 'PENDING' and attempt_count = 0`;
    expect(untouched[0]?.n, "events written during the outage are not claimed and use no attempt").toBe(50);
    expect(await maxAttempts(), "at most the attempt in flight at the crash").toBeLessThanOrEqual(1);

    await broker.start();
    await produce(50);
    await waitUntil(
      async () => (await countByStatus(sql)).PUBLISHED === 200,
      "all 200 PUBLISHED after the restart",
      60_000,
    );
    const messages = await readStream(jsm, stream);
    expect(messages.map((m) => m.msgId).sort(), "each event exactly once").toEqual([...ids].sort());
    expect(await maxAttempts(), "the outage used at most the attempt in flight").toBeLessThanOrEqual(2);
    await worker.stop();
    await nc.close();
  },
);
