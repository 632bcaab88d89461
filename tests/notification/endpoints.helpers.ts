// Set-up of the webhook endpoint tests: receivers on 127.0.0.1 with answers each test decides, the app with the admin
// API, the endpoint delivery worker, and notifications stored through the consumer's own statement.
import { afterAll } from "bun:test";
import { createSecretBox } from "../../src/notification/features/endpoints/secrets.ts";
import type { Resolve } from "../../src/notification/features/endpoints/url-guard.ts";
import { storeEvents } from "../../src/notification/intake/consumer/batch.ts";
import type { NotificationType } from "../../src/notification/intake/consumer/handler.ts";
import { endpointDeliveryWorker } from "../../src/notification/work/endpoints/build.ts";
import { parseTokenEntries, tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import type { Sql } from "../../src/shared/db.ts";
import type { Logger } from "../../src/shared/logger.ts";
import { silentLogger } from "../../src/shared/logger.ts";
import { Waker } from "../../src/shared/runtime.ts";
import { notificationApp } from "./app.helpers.ts";
import { testConfig, testMetrics } from "./helpers.ts";

export const SECRET_KEY = "a".repeat(64);
export const WRITER = "writer-token-of-the-endpoint-tests";
export const READER = "reader-token-of-the-endpoint-tests";
export const TOKENS = [tokenEntryLine("writer", WRITER, "read+write"), tokenEntryLine("reader", READER, "read")].join(
  ",",
);

export type Hit = { body: string; headers: Record<string, string> };

/** A receiver on 127.0.0.1: records every request, answers with `answer` (a promise that never settles hangs). */
export function startReceiver() {
  const receiver = {
    hits: [] as Hit[],
    answer: (): Response | Promise<Response> => new Response("ok", { status: 200 }),
    server: undefined as unknown as ReturnType<typeof Bun.serve>,
    get url() {
      return `http://127.0.0.1:${receiver.server.port}/hook`;
    },
  };
  receiver.server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    fetch: async (request) => {
      receiver.hits.push({ body: await request.text(), headers: Object.fromEntries(request.headers) });
      return receiver.answer();
    },
  });
  afterAll(() => receiver.server.stop(true));
  return receiver;
}
export type Receiver = ReturnType<typeof startReceiver>;

export function endpointConfig(env: Record<string, string> = {}) {
  return testConfig({
    NOTIFICATION_AUTH_TOKENS: TOKENS,
    NOTIFICATION_ENDPOINT_SECRET_KEY: SECRET_KEY,
    NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: "true",
    NOTIFICATION_ENDPOINT_MAX_ATTEMPTS: "3",
    NOTIFICATION_ENDPOINT_BACKOFF_BASE: "50ms",
    NOTIFICATION_ENDPOINT_BACKOFF_MIN: "50ms",
    NOTIFICATION_ENDPOINT_BACKOFF_MAX: "100ms",
    ...env,
  });
}

export function endpointApp(
  sql: Sql,
  options: { allowPrivate?: boolean; resolve?: Resolve; waker?: Waker; log?: Logger; now?: () => Date } = {},
) {
  const { registry } = testMetrics();
  const box = createSecretBox(Buffer.from(SECRET_KEY, "hex"));
  const app = notificationApp(sql, {
    log: options.log ?? silentLogger,
    registry,
    endpoints: {
      tokens: parseTokenEntries(TOKENS, "NOTIFICATION_AUTH_TOKENS").entries,
      service: {
        sql,
        now: options.now ?? (() => new Date()),
        box,
        allowPrivate: options.allowPrivate ?? true,
        resolve: options.resolve,
        onDue: () => options.waker?.wake(),
      },
    },
  });
  const call = async (method: string, path: string, body?: unknown, token = WRITER) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await app.handle(
      new Request(`http://localhost${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    const text = await response.text();
    // biome-ignore lint/suspicious/noExplicitAny: test answers are read field by field
    return { status: response.status, body: (text ? JSON.parse(text) : undefined) as any, headers: response.headers };
  };
  return { app, registry, call };
}

/** Runs the endpoint delivery worker until the returned stop is called. */
export function runEndpointWorker(
  sql: Sql,
  options: { env?: Record<string, string>; resolve?: Resolve; log?: Logger; waker?: Waker; now?: () => Date } = {},
) {
  const { metrics, registry } = testMetrics();
  const waker = options.waker ?? new Waker();
  const worker = endpointDeliveryWorker({
    config: endpointConfig(options.env),
    sql,
    log: options.log ?? silentLogger,
    now: options.now ?? (() => new Date()),
    metrics,
    waker,
    workerId: `w-${crypto.randomUUID().slice(0, 8)}`,
    resolve: options.resolve,
  });
  if (!worker) throw new Error("the endpoint worker needs a key");
  const controller = new AbortController();
  const running = worker.run(controller.signal);
  return {
    waker,
    registry,
    stop: async () => {
      controller.abort();
      await running;
    },
  };
}

/** Stores notifications through the consumer's statement (the fan-out happens there); returns their ids. */
export async function storeNotifications(
  sql: Sql,
  drafts: { type?: NotificationType; userId?: string }[],
): Promise<string[]> {
  const events = drafts.map((d) => ({
    eventId: crypto.randomUUID(),
    notifications: [
      {
        userId: d.userId ?? `u_${crypto.randomUUID().slice(0, 8)}`,
        type: d.type ?? "EntitlementGranted",
        occurredAt: new Date().toISOString(),
        payload: { sku: "sku_basic" },
      },
    ],
  }));
  await storeEvents(sql, events, new Date());
  const rows = await sql<{ event_id: string; notification_id: string }[]>`
    select event_id, notification_id from notifications where event_id = any(${events.map((e) => e.eventId)}::uuid[])`;
  const byEvent = new Map(rows.map((r) => [r.event_id, r.notification_id]));
  return events.map((e) => byEvent.get(e.eventId) as string);
}
