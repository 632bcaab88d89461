// Shared fixtures of the outbox and retention tests: a database per file, unique stream names, outbox rows written
// directly with SQL (as the API's grant would, announced as another replica announces its commits), and a relay wired
// like the service wires it.
import { afterAll, beforeAll, beforeEach } from "bun:test";
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Registry } from "prom-client";
import type { RelayDeps } from "../../src/entitlement/work/outbox/batch.ts";
import { createOutboxMetrics } from "../../src/entitlement/work/outbox/metrics.ts";
import type { RelaySettings } from "../../src/entitlement/work/outbox/policy.ts";
import type { Publisher } from "../../src/entitlement/work/outbox/publisher.ts";
import { countFailedOutbox } from "../../src/entitlement/work/outbox/queries.ts";
import { createOutboxRelay } from "../../src/entitlement/work/outbox/relay.ts";
import { ensureEntitlementStream } from "../../src/entitlement/work/outbox/stream.ts";
import { createWakeups } from "../../src/entitlement/work/wakeups.ts";
import type { Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { natsUrl, type TestDatabase, uniqueName, useTestDatabase } from "../support/infra.ts";
import { otherReplica } from "../support/wakeups.ts";

export type Fixture = {
  db: TestDatabase;
  sql: Sql;
  /** Empties Entitlement's tables (resetService). */
  reset: () => Promise<void>;
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  stream: string;
  subject: string;
  close: () => Promise<void>;
};

async function openStream(label: string) {
  const nc = await connect({ servers: await natsUrl() });
  const jsm = await jetstreamManager(nc);
  const stream = uniqueName(`ev_${label}`).replaceAll(".", "_");
  const subject = `${stream}.events`;
  await ensureEntitlementStream(jsm, { stream, subject, duplicateWindowMs: 120_000, replicas: 1 });
  return {
    nc,
    js: jetstream(nc),
    jsm,
    stream,
    subject,
    close: async () => {
      await jsm.streams.delete(stream).catch(() => false);
      await nc.close();
    },
  };
}

/**
 * Registers the hooks of one test file: its database (useTestDatabase) and a stream of its own opened before all
 * tests, emptied before each, closed after all. The returned object is filled in by the first hooks.
 */
export function useFixture(label: string): Fixture {
  const database = useTestDatabase(label, { service: "entitlement", resetEach: true });
  const f = {} as Fixture;
  beforeAll(async () => {
    const { db, sql, reset } = database;
    Object.assign(f, { db, sql, reset }, await openStream(label));
  });
  afterAll(async () => {
    await f.close();
  });
  beforeEach(async () => {
    await f.jsm.streams.purge(f.stream);
  });
  return f;
}

export function settingsFor(subject: string, overrides: Partial<RelaySettings> = {}): RelaySettings {
  return {
    subject,
    batchSize: 50,
    concurrency: 4,
    maxAttempts: 10,
    leaseMs: 30_000,
    pollIntervalMs: 1_000,
    errorMessageMaxLength: 1000,
    backoff: { baseMs: 1000, maxMs: 60_000, minMs: 1000, exponentBase: 2, jitterMin: 0.5, jitterMax: 1.5 },
    ...overrides,
  };
}

export type TestRelay = ReturnType<typeof createOutboxRelay> & { registry: Registry; deps: RelayDeps };

export function makeRelay(
  f: Fixture,
  options: Partial<Omit<RelayDeps, "settings">> & { settings?: Partial<RelaySettings> } = {},
): TestRelay {
  const registry = new Registry();
  const deps: RelayDeps = {
    sql: f.sql,
    js: f.js,
    log: silentLogger,
    now: () => new Date(),
    metrics: createOutboxMetrics(registry, () => countFailedOutbox(f.sql)),
    lockedBy: uniqueName("relay"),
    isConnected: () => true,
    ...options,
    settings: settingsFor(f.subject, options.settings),
  };
  const wakeups = createWakeups({ sql: f.sql, log: silentLogger, retryMs: deps.settings.pollIntervalMs });
  return Object.assign(createOutboxRelay({ ...deps, wakeups }), { registry, deps });
}

/** A clock the test moves by hand, so backoff and leases need no waiting. */
export function manualClock(start = new Date()) {
  let t = start.getTime();
  return { now: () => new Date(t), advance: (ms: number) => (t += ms) };
}

/** Publishes through `js` after `sleepMs` each, counting the most publishes that were under way at once. */
export function overlapCounting(js: Publisher, sleepMs: number): Publisher & { most: number } {
  let publishing = 0;
  const p = {
    most: 0,
    publish: (async (...args: Parameters<Publisher["publish"]>) => {
      p.most = Math.max(p.most, ++publishing);
      try {
        await Bun.sleep(sleepMs);
        return await js.publish(...args);
      } finally {
        publishing -= 1;
      }
    }) as Publisher["publish"],
  };
  return p;
}

/** Fails the first `n` publishes with `error`, then publishes through `js`. */
export function failingFirst(js: Publisher, n: number, error: () => unknown): Publisher & { calls: number } {
  const p = {
    calls: 0,
    publish: (async (...args: Parameters<Publisher["publish"]>) => {
      p.calls += 1;
      if (p.calls <= n) throw error();
      return js.publish(...args);
    }) as Publisher["publish"],
  };
  return p;
}

export type NewEvent = {
  eventId?: string;
  eventType?: string;
  userId?: string;
  sku?: string;
  createdAt?: Date;
  occurredAt?: string;
  status?: string;
  attemptCount?: number;
  nextRetryAt?: Date | null;
  leaseUntil?: Date | null;
  lockedBy?: string | null;
  publishedAt?: Date | null;
  payload?: unknown;
};

/** The payload the API writes (docs/events.md), for `event`'s id and time. */
export function payloadFor(eventId: string, e: NewEvent, occurredAt: string): Record<string, unknown> {
  return {
    event_id: eventId,
    event_type: e.eventType ?? "EntitlementGranted",
    occurred_at: occurredAt,
    user_id: e.userId ?? "u_1",
    stock_keeping_unit: e.sku ?? "sku_1",
    source: "purchase",
    source_id: "p_1",
    version: 0,
    trace_id: `trace-${eventId}`,
  };
}

export async function insertEvent(sql: Sql, e: NewEvent = {}): Promise<string> {
  const eventId = e.eventId ?? crypto.randomUUID();
  const createdAt = e.createdAt ?? new Date();
  const occurredAt = e.occurredAt ?? createdAt.toISOString();
  const payload = e.payload ?? payloadFor(eventId, e, occurredAt);
  await sql`
    insert into outbox_events (event_id, event_type, aggregate_key, payload, status, attempt_count, next_retry_at,
                               created_at, published_at, locked_by, locked_at, lease_until)
    values (${eventId}, ${e.eventType ?? "EntitlementGranted"}, ${`${e.userId ?? "u_1"}:${e.sku ?? "sku_1"}`},
            ${sql.json(payload as never)}, ${e.status ?? "PENDING"}, ${e.attemptCount ?? 0}, ${e.nextRetryAt ?? null},
            ${createdAt}, ${e.publishedAt ?? null}, ${e.lockedBy ?? null},
            ${e.lockedBy ? createdAt : null}, ${e.leaseUntil ?? null})`;
  otherReplica(sql).committed({ events: true });
  return eventId;
}

/** Many events in one statement (one announcement), 1 ms apart in created_at so their order is defined. */
export async function insertEvents(sql: Sql, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => crypto.randomUUID());
  const base = Date.now();
  const times = ids.map((_, i) => new Date(base + i).toISOString());
  const keys = ids.map((_, i) => `u_${i}:sku`);
  const payloads = ids.map((id, i) =>
    JSON.stringify(payloadFor(id, { userId: `u_${i}`, sku: "sku" }, times[i] as string)),
  );
  await sql`
    insert into outbox_events (event_id, event_type, aggregate_key, payload, status, created_at)
    select event_id, 'EntitlementGranted', aggregate_key, payload, 'PENDING', created_at
    from unnest(${ids}::uuid[], ${keys}::text[], ${payloads}::jsonb[], ${times}::timestamptz[])
      as r(event_id, aggregate_key, payload, created_at)`;
  otherReplica(sql).committed({ events: true });
  return ids;
}

export type OutboxState = {
  event_id: string;
  status: string;
  attempt_count: number;
  next_retry_at: Date | null;
  published_at: Date | null;
  locked_by: string | null;
  locked_at: Date | null;
  lease_until: Date | null;
  last_error: string | null;
};

export async function readEvent(sql: Sql, eventId: string): Promise<OutboxState> {
  const [row] = await sql<OutboxState[]>`
    select event_id, status, attempt_count, next_retry_at, published_at, locked_by, locked_at, lease_until, last_error
    from outbox_events where event_id = ${eventId}`;
  if (!row) throw new Error(`no outbox row ${eventId}`);
  return row;
}

export async function countByStatus(sql: Sql): Promise<Record<string, number>> {
  const rows = await sql<{ status: string; n: number }[]>`
    select status, count(*)::int as n from outbox_events group by status`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

export type StoredEvent = {
  seq: number;
  msgId: string;
  headers: Record<string, string>;
  data: Uint8Array;
  /** JetStream's append time, ISO-8601 with nanoseconds. */
  timestamp: string;
};

/** Every message of the stream, read back by sequence. */
export async function readStream(jsm: JetStreamManager, stream: string): Promise<StoredEvent[]> {
  const info = await jsm.streams.info(stream);
  const out: StoredEvent[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq });
    if (!m) continue;
    const headers: Record<string, string> = {};
    for (const [k, v] of m.header ?? []) headers[k] = v.join(",");
    out.push({ seq, msgId: m.header?.get("Nats-Msg-Id") ?? "", headers, data: m.data, timestamp: m.timestamp });
  }
  return out;
}

export async function streamCount(jsm: JetStreamManager, stream: string): Promise<number> {
  return (await jsm.streams.info(stream)).state.messages;
}

export async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}) {
  const metric = registry.getSingleMetric(name);
  if (!metric) return undefined;
  const data = await metric.get();
  const sample = data.values.find(
    (v) =>
      Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want) &&
      (!("metricName" in v) || v.metricName === name || v.metricName === `${name}_count`),
  );
  return sample?.value;
}
