// One grant, one trace (docs/architecture.md), with both compiled executables: a grant sent with a W3C `traceparent` yields
// connected spans in both services (HTTP request → transaction → relay publish → consume → delivery), exported over
// OTLP/HTTP to a receiver in this test; the webhook request (the configured channel's, and a registered endpoint's)
// carries its delivery span's `traceparent`, the event carries the trace id, and the log lines of that work carry
// trace_id and span_id.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { tokenEntryLine } from "../../src/shared/auth/tokens.ts";
import { waitUntil } from "../support/wait.ts";
import { command, type Pair, startPair } from "./pair.ts";

type OtlpSpan = { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number };
type ExportedSpan = OtlpSpan & { service: string };
type OtlpBody = {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { spans: OtlpSpan[] }[];
  }[];
};

const TRACE_ID = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("hex");
const CALLER_SPAN_ID = Buffer.from(crypto.getRandomValues(new Uint8Array(8))).toString("hex");
const SECRET = `whsec_${Buffer.from("a-test-secret-of-32-bytes-length").toString("base64")}`;
const ADMIN = "admin-token-of-the-traces-test";

const spans: ExportedSpan[] = [];
type WebhookCall = { traceparent: string | null; body: { payload: { trace_id: string } } };
/** Requests of the configured channel (/hook) and of the registered endpoint (/endpoint). */
const webhookCalls: WebhookCall[] = [];
const endpointCalls: WebhookCall[] = [];
let collector: ReturnType<typeof Bun.serve>;
let receiver: ReturnType<typeof Bun.serve>;
let pair: Pair;
let logs = "";

beforeAll(async () => {
  collector = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      if (new URL(request.url).pathname !== "/v1/traces") return new Response("no", { status: 404 });
      const body = (await request.json()) as OtlpBody;
      for (const rs of body.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue ?? "";
        for (const ss of rs.scopeSpans) for (const span of ss.spans) spans.push({ ...span, service });
      }
      return Response.json({});
    },
  });
  // The first delivery fails (500), so the retry's log line shows that delivery logs carry the trace; the second works.
  receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const call = {
        traceparent: request.headers.get("traceparent"),
        body: (await request.json()) as WebhookCall["body"],
      };
      if (new URL(request.url).pathname === "/endpoint") {
        endpointCalls.push(call);
        return new Response(null, { status: 204 });
      }
      webhookCalls.push(call);
      return new Response(null, { status: webhookCalls.length === 1 ? 500 : 204 });
    },
  });
  pair = await startPair({
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.port}`,
      NOTIFICATION_DELIVERY_CHANNEL: "webhook",
      NOTIFICATION_WEBHOOK_URL: `http://127.0.0.1:${receiver.port}/hook`,
      NOTIFICATION_WEBHOOK_SECRET: SECRET,
      NOTIFICATION_DELIVERY_BACKOFF_BASE: "100ms",
      NOTIFICATION_DELIVERY_BACKOFF_MIN: "100ms",
      NOTIFICATION_DELIVERY_POLL_INTERVAL: "100ms",
      NOTIFICATION_AUTH_TOKENS: tokenEntryLine("admin", ADMIN, "read+write"),
      NOTIFICATION_ENDPOINT_SECRET_KEY: "b".repeat(64),
      NOTIFICATION_ENDPOINT_ALLOW_PRIVATE: "true",
    },
  });
  const registered = await fetch(`${pair.notification.url}/v1/webhook-endpoints`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}/endpoint`, event_types: ["EntitlementGranted"] }),
  });
  expect(registered.status).toBe(201);
  const grant = await command(
    pair.entitlement.url,
    "grants",
    "trace-1",
    { user_id: "u-trace", stock_keeping_unit: "sku-1", reason: "purchase", purchase_id: "p-1" },
    { traceparent: `00-${TRACE_ID}-${CALLER_SPAN_ID}-01` },
  );
  expect(grant.status).toBe(200);
  await waitUntil(() => webhookCalls.length >= 2, "the webhook retried and accepted", 60_000);
  await waitUntil(() => endpointCalls.length >= 1, "the registered endpoint's request", 60_000);
  // Stopping flushes the exporters (SIGTERM → provider shutdown), so every span has arrived once both exited 0.
  expect(await pair.entitlement.stop()).toBe(0);
  expect(await pair.notification.stop()).toBe(0);
  logs = `${await pair.entitlement.output()}\n${await pair.notification.output()}`;
}, 240_000);

afterAll(async () => {
  await pair?.close();
  collector?.stop(true);
  receiver?.stop(true);
});

const ofTrace = () => spans.filter((s) => s.traceId === TRACE_ID);
const named = (name: string | RegExp) =>
  ofTrace().filter((s) => (typeof name === "string" ? s.name === name : name.test(s.name)));
const one = (name: string | RegExp) => {
  const found = named(name);
  expect(
    found.length,
    `spans named ${name}: ${ofTrace()
      .map((s) => s.name)
      .join(", ")}`,
  ).toBeGreaterThanOrEqual(1);
  return found[0] as ExportedSpan;
};

test("one grant is one connected trace across both services", () => {
  const trace = ofTrace();
  expect(new Set(trace.map((s) => s.service))).toEqual(new Set(["entitlement", "notification"]));
  const request = one("POST /v1/entitlements/grants");
  const transaction = one("GRANT transaction");
  const publish = one(/ publish$/);
  const consume = one(/ process$/);
  const deliveries = named("notification deliver");
  expect(request.parentSpanId, "the request span continues the caller's traceparent").toBe(CALLER_SPAN_ID);
  expect(transaction.parentSpanId).toBe(request.spanId);
  expect(publish.parentSpanId, "the relay continues from the outbox row").toBe(transaction.spanId);
  expect(consume.parentSpanId, "the consumer continues from the NATS header").toBe(publish.spanId);
  expect(consume.service).toBe("notification");
  expect(deliveries.length, "two attempts, two delivery spans").toBe(2);
  for (const d of deliveries)
    expect(d.parentSpanId, "each delivery continues from the stored consume").toBe(consume.spanId);
  const ids = new Set(trace.map((s) => s.spanId));
  const orphans = trace.filter((s) => s !== request && !ids.has(s.parentSpanId ?? ""));
  expect(
    orphans.map((s) => s.name),
    "every span but the first has its parent in the trace",
  ).toEqual([]);
});

test("the webhook request carries the delivery span's traceparent and the event carries the trace id", () => {
  const deliveries = named("notification deliver").map((s) => s.spanId);
  for (const call of webhookCalls) {
    const [version, traceId, spanId] = (call.traceparent ?? "").split("-");
    expect(version).toBe("00");
    expect(traceId).toBe(TRACE_ID);
    expect(deliveries).toContain(spanId as string);
    expect(call.body.payload.trace_id, "the event's trace_id is the W3C trace id").toBe(TRACE_ID);
  }
});

test("a registered endpoint's request carries its own delivery span's traceparent, in the grant's trace", () => {
  const deliveries = named("notification deliver to endpoint").map((s) => s.spanId);
  expect(endpointCalls.length).toBeGreaterThanOrEqual(1);
  for (const call of endpointCalls) {
    const [version, traceId, spanId] = (call.traceparent ?? "").split("-");
    expect(version).toBe("00");
    expect(traceId).toBe(TRACE_ID);
    expect(deliveries).toContain(spanId as string);
  }
});

test("the log lines of that work carry trace_id and span_id", () => {
  const lines = logs
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const retry = lines.find((l) => l.msg === "delivery failed, retry scheduled");
  expect(retry, "the failed first attempt is logged").toBeDefined();
  expect(retry?.trace_id).toBe(TRACE_ID);
  expect(named("notification deliver").map((s) => s.spanId)).toContain(retry?.span_id as string);
});
