// Shared set-up for the Notification tests: configuration with unique stream names, a database handle in the
// notification schema, seeded rows and protobuf events. A test file's own database comes from useTestDatabase
// (tests/support/infra.ts).
import { afterAll, beforeAll } from "bun:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import {
  type EntitlementEvent,
  EntitlementEvent_EventType,
  EntitlementEventSchema,
} from "../../src/gen/entitlement_event_pb.ts";
import { type MatchmakingEvent, MatchmakingEventSchema } from "../../src/gen/matchmaking_event_pb.ts";
import { type PointsEvent, PointsEventSchema } from "../../src/gen/points_event_pb.ts";
import { loadNotificationConfig, type NotificationConfig } from "../../src/notification/config.ts";
import { type AdvisorySpec, advisorySpecs } from "../../src/notification/intake/advisories/worker.ts";
import type { EventPipeline } from "../../src/notification/intake/consumer/handler.ts";
import type { ConsumerHealth } from "../../src/notification/intake/consumer/worker.ts";
import { eventPipelines } from "../../src/notification/intake/handlers/registry.ts";
import { createNotificationMetrics, type NotificationMetrics } from "../../src/notification/metrics.ts";
import { SCHEMA } from "../../src/notification/migrations.ts";
import type { DeliveryDeps } from "../../src/notification/work/delivery/deps.ts";
import { createWorkers } from "../../src/notification/workers.ts";
import { createSql, type Sql } from "../../src/shared/db.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { createRegistry } from "../../src/shared/metrics.ts";
import { createNatsLink } from "../../src/shared/nats.ts";
import { systemClock, Waker } from "../../src/shared/runtime.ts";
import { type DatabaseFixture, natsUrl, uniqueName } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";

export function notificationSql(url: string, max = 8): Sql {
  return createSql({ url, schema: SCHEMA, max, applicationName: "notification-test" });
}

/** Configuration for one test file: its own stream, subject, durables and matching advisory subjects. */
export function testConfig(env: Record<string, string> = {}): NotificationConfig {
  const base = uniqueName("nt").replaceAll("_", "-");
  const stream = `${base}-events`;
  const durable = `${base}-consumer`;
  return loadNotificationConfig({
    NOTIFICATION_NATS_STREAM: stream,
    NOTIFICATION_NATS_SUBJECT: `${base}.events`,
    NOTIFICATION_NATS_DURABLE: durable,
    NOTIFICATION_NATS_ADVISORY_STREAM: `${base}-maxdeliver`,
    NOTIFICATION_NATS_ADVISORY_DURABLE: `${base}-maxdeliver-consumer`,
    NOTIFICATION_NATS_TERMINATED_ADVISORY_STREAM: `${base}-terminated`,
    NOTIFICATION_NATS_TERMINATED_ADVISORY_DURABLE: `${base}-terminated-consumer`,
    NOTIFICATION_MATCHMAKING_NATS_STREAM: `${base}-matches`,
    NOTIFICATION_MATCHMAKING_NATS_SUBJECT: `${base}.matches`,
    NOTIFICATION_MATCHMAKING_NATS_DURABLE: `${base}-matches-consumer`,
    NOTIFICATION_POINTS_NATS_STREAM: `${base}-points`,
    NOTIFICATION_POINTS_NATS_SUBJECT: `${base}.points`,
    NOTIFICATION_POINTS_NATS_DURABLE: `${base}-points-consumer`,
    NOTIFICATION_DELIVERY_POLL_INTERVAL: "200ms",
    NOTIFICATION_DELIVERY_BACKOFF_BASE: "50ms",
    NOTIFICATION_DELIVERY_BACKOFF_MIN: "50ms",
    NOTIFICATION_DELIVERY_BACKOFF_MAX: "100ms",
    NOTIFICATION_RETENTION_ENABLED: "false",
    ...env,
  });
}

/**
 * The stream, subject and durable names of `config` as variables for a `serve` child process, with its database and
 * NATS: a default name would meet whatever another run left on the shared NATS ("subjects overlap with an existing
 * stream"). Durations and counts are left to their defaults.
 */
export function serveEnv(
  config: NotificationConfig,
  urls: { database: string; nats: string },
  extra: Record<string, string> = {},
): Record<string, string> {
  const e = config.env as Record<string, unknown>;
  const names = Object.keys(e).filter(
    (k) => /^NOTIFICATION_(MATCHMAKING_|POINTS_)?NATS_/.test(k) && typeof e[k] === "string",
  );
  return {
    ...Object.fromEntries(names.map((k) => [k, String(e[k])])),
    DATABASE_URL: urls.database,
    NATS_URL: urls.nats,
    PORT: "0",
    HOST: "127.0.0.1",
    PATH: process.env.PATH ?? "",
    ...extra,
  };
}

export function streamsOf(config: NotificationConfig): string[] {
  const kinds = [config.nats.matchmaking, config.nats.points].flatMap((c) => (c ? [c.stream] : []));
  return [config.nats.stream, ...kinds, ...config.nats.advisories.map((a) => a.stream)];
}

/** One kind's pipeline and the advisory streams of all of them: what createEventConsumer takes besides its deps. */
export function consumerOf(
  config: NotificationConfig,
  source = "entitlement",
): { pipeline: EventPipeline; advisories: AdvisorySpec[] } {
  const pipelines = eventPipelines(config.nats);
  const pipeline = pipelines.find((p) => p.handler.source === source);
  if (!pipeline) throw new Error(`no ${source} pipeline in this configuration`);
  return { pipeline, advisories: advisorySpecs(config.nats.advisories, pipelines) };
}

/** Waits until the consumer of `source` reads. */
export const consumerBound = (health: ConsumerHealth, source = "entitlement") =>
  waitUntil(async () => (health.bound[source] ? true : undefined), `the ${source} consumer to bind`, 30_000, 100);

export async function deleteStreams(nc: NatsConnection, names: string[]): Promise<void> {
  const jsm = await jetstreamManager(nc);
  for (const name of names) await jsm.streams.delete(name).catch(() => false);
}

export function testMetrics() {
  const registry = createRegistry("notification-test");
  return { registry, metrics: createNotificationMetrics(registry) };
}

export function eventBytes(fields: Partial<Omit<EntitlementEvent, "$typeName">> = {}): Uint8Array {
  return toBinary(
    EntitlementEventSchema,
    create(EntitlementEventSchema, {
      eventId: crypto.randomUUID(),
      eventType: EntitlementEvent_EventType.ENTITLEMENT_GRANTED,
      occurredAt: new Date().toISOString(),
      userId: uniqueName("user"),
      stockKeepingUnit: "sku_basic",
      source: "purchase",
      sourceId: uniqueName("p"),
      version: 0n,
      traceId: crypto.randomUUID(),
      ...fields,
    }),
  );
}

export type SeedRow = {
  notificationId?: string;
  eventId?: string;
  userId?: string;
  status?: "PENDING" | "PROCESSING" | "SENT" | "FAILED";
  createdAt?: Date;
  nextRetryAt?: Date | null;
  lockedBy?: string | null;
  leaseUntil?: Date | null;
  attemptCount?: number;
  occurredAt?: Date;
};

/** Inserts one notification row directly; returns its id. */
export async function seedNotification(sql: Sql, row: SeedRow = {}): Promise<string> {
  const id = row.notificationId ?? crypto.randomUUID();
  const eventId = row.eventId ?? crypto.randomUUID();
  const userId = row.userId ?? uniqueName("user");
  const createdAt = row.createdAt ?? new Date();
  const payload = JSON.stringify({ event_id: eventId, user_id: userId, event_type: "EntitlementGranted" });
  await sql`
    insert into notifications (notification_id, event_id, user_id, type, occurred_at, payload_json, status,
      locked_by, lease_until, attempt_count, next_retry_at, created_at)
    values (${id}, ${eventId}, ${userId}, 'EntitlementGranted', ${row.occurredAt ?? createdAt}, ${payload}::text::jsonb,
      ${row.status ?? "PENDING"}, ${row.lockedBy ?? null}, ${row.leaseUntil ?? null}, ${row.attemptCount ?? 0},
      ${row.nextRetryAt === undefined ? createdAt : row.nextRetryAt}, ${createdAt})`;
  return id;
}

export async function notificationRow(sql: Sql, id: string) {
  const [row] = await sql<
    {
      status: string;
      attempt_count: number;
      locked_by: string | null;
      locked_at: Date | null;
      lease_until: Date | null;
      next_retry_at: Date | null;
      sent_at: Date | null;
      last_error: string | null;
    }[]
  >`select status, attempt_count, locked_by, locked_at, lease_until, next_retry_at, sent_at, last_error
    from notifications where notification_id = ${id}`;
  if (!row) throw new Error(`notification ${id} does not exist`);
  return row;
}

/** Delivery dependencies with max attempts 3, a fixed clock and a sender that records what it was given. */
export function deliveryDeps(
  sql: Sql,
  now: Date,
  overrides: Partial<DeliveryDeps> = {},
): DeliveryDeps & { sent: string[] } {
  const sent: string[] = [];
  const config = testConfig({ NOTIFICATION_DELIVERY_MAX_ATTEMPTS: "3" }).delivery;
  return {
    sql,
    log: silentLogger,
    now: () => now,
    metrics: testMetrics().metrics,
    send: async (d) => void sent.push(d.notificationId),
    workerId: "worker-a",
    batchSize: 50,
    maxAttempts: config.maxAttempts,
    leaseMs: 30_000,
    errorMessageMaxLength: 1000,
    backoff: config.backoff,
    sent,
    ...overrides,
  };
}

export async function dlqCount(sql: Sql, notificationId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from notification_dlq where notification_id = ${notificationId}`;
  return row?.n ?? 0;
}

export function matchBytes(fields: Partial<Omit<MatchmakingEvent, "$typeName">> = {}): Uint8Array {
  return toBinary(
    MatchmakingEventSchema,
    create(MatchmakingEventSchema, {
      eventId: crypto.randomUUID(),
      occurredAt: new Date().toISOString(),
      matchId: uniqueName("match"),
      mode: "rank",
      traceId: crypto.randomUUID(),
      ...fields,
    }),
  );
}

export function pointsBytes(fields: Partial<Omit<PointsEvent, "$typeName">> = {}): Uint8Array {
  return toBinary(
    PointsEventSchema,
    create(PointsEventSchema, {
      eventId: crypto.randomUUID(),
      occurredAt: new Date().toISOString(),
      userId: uniqueName("user"),
      pointAmount: 500n,
      balanceAfter: 1_500n,
      reservationId: crypto.randomUUID(),
      traceId: crypto.randomUUID(),
      ...fields,
    }),
  );
}

export type Pipeline = {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  health: ConsumerHealth;
  /** What the channel was given to send, in order. */
  sent: { userId: string; type: string; payload: Record<string, unknown> }[];
};

/**
 * For the test file: every worker main runs, on `f`'s database and a NATS connection of its own, the configured
 * channel replaced by a recorder that throws for the users `refuse` names; ready once each of `sources`' consumers is
 * bound. After the file, the workers stop and the streams of `config` are deleted.
 */
export function usePipeline(
  f: DatabaseFixture,
  options: {
    config: NotificationConfig;
    metrics: NotificationMetrics;
    workerId: string;
    sources: string[];
    refuse?: (userId: string) => boolean;
  },
): Pipeline {
  const pipe = { health: { bound: {} }, sent: [] } as unknown as Pipeline;
  const stop = new AbortController();
  let running: Promise<void>[] = [];
  beforeAll(async () => {
    pipe.nc = await connect({ servers: await natsUrl() });
    pipe.js = jetstream(pipe.nc);
    pipe.jsm = await jetstreamManager(pipe.nc);
    const workers = createWorkers({
      config: options.config,
      sql: f.sql,
      log: silentLogger,
      now: systemClock,
      metrics: options.metrics,
      waker: new Waker(),
      workerId: options.workerId,
      link: createNatsLink(Promise.resolve(pipe.nc), silentLogger),
      health: pipe.health,
      send: async (d) => {
        if (options.refuse?.(d.userId)) throw new Error("receiver refuses this player");
        pipe.sent.push({ userId: d.userId, type: d.type, payload: d.payload });
      },
    });
    running = workers.map((w) => w.run(stop.signal));
    for (const source of options.sources) await consumerBound(pipe.health, source);
  });
  afterAll(async () => {
    stop.abort();
    await Promise.all(running);
    await deleteStreams(pipe.nc, streamsOf(options.config));
    await pipe.nc.close();
  });
  return pipe;
}
