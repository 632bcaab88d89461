import { expect, test } from "bun:test";
import { createHttpApp } from "../../src/shared/http/app.ts";
import { ApiError, jsonResponse } from "../../src/shared/http/errors.ts";
import { createLogger, silentLogger } from "../../src/shared/logger.ts";
import { createRegistry } from "../../src/shared/metrics.ts";

function build(ready: boolean) {
  const registry = createRegistry("test");
  const app = createHttpApp({
    service: "test",
    version: "0.0.0",
    log: silentLogger,
    registry,
    readiness: async () => {
      if (!ready) throw new Error("database down");
    },
  })
    .post("/things", () => jsonResponse(409, { code: "ENTITLEMENT_STATE_CONFLICT", message: "already ACTIVE" }))
    .get("/secret", () => {
      throw new ApiError(401, "UNAUTHORIZED", "missing token", { "www-authenticate": "Bearer" });
    })
    .get("/busy", () => {
      throw new ApiError(503, "NOT_READY", "too many requests in progress, retry later");
    })
    .get("/boom", () => {
      throw new Error("select * from secrets failed");
    })
    .get("/busy", () => {
      throw new ApiError(503, "NOT_READY", "too many requests in progress, retry later");
    })
    .get("/limited", () => {
      throw new ApiError(429, "RATE_LIMITED", "rate limit exceeded", { "retry-after": "7" });
    });
  return { app, registry };
}

const call = (app: ReturnType<typeof build>["app"], method: string, path: string) =>
  app.handle(new Request(`http://localhost${path}`, { method }));

test("every error status answers the {code, message} envelope as JSON, with no internals", async () => {
  const { app } = build(false);
  const cases: [string, string, number, string][] = [
    ["GET", "/nowhere", 404, "NOT_FOUND"],
    ["GET", "/things", 405, "METHOD_NOT_ALLOWED"],
    ["GET", "/things/", 404, "NOT_FOUND"],
    ["GET", "/secret", 401, "UNAUTHORIZED"],
    ["GET", "/boom", 500, "INTERNAL_ERROR"],
    ["GET", "/readyz", 503, "NOT_READY"],
  ];
  for (const [method, path, status, code] of cases) {
    const response = await call(app, method, path);
    expect(response.status, `${method} ${path}`).toBe(status);
    expect(response.headers.get("content-type")).toStartWith("application/json");
    const body = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["code", "message"]);
    expect(body.code).toBe(code);
    expect(JSON.stringify(body)).not.toContain("select");
  }
  expect((await call(app, "GET", "/things")).headers.get("allow")).toBe("POST");
  expect((await call(app, "GET", "/secret")).headers.get("www-authenticate")).toBe("Bearer");
  const busy = await call(app, "GET", "/busy");
  expect([busy.status, busy.headers.get("retry-after")], "a 503 says when to retry").toEqual([503, "1"]);
});

test("every 503 carries Retry-After in seconds, and a 429 keeps its own", async () => {
  const { app } = build(false);
  for (const path of ["/readyz", "/busy"]) {
    const response = await call(app, "GET", path);
    expect(response.status, path).toBe(503);
    expect(response.headers.get("retry-after"), `a 503 from ${path} says when to retry`).toMatch(/^[1-9]\d*$/);
  }
  expect((await call(app, "GET", "/limited")).headers.get("retry-after")).toBe("7");
  expect((await call(app, "GET", "/boom")).headers.get("retry-after"), "a 500 promises nothing").toBeNull();
});

test("request metrics count the status that was actually sent", async () => {
  const { app, registry } = build(false);
  for (const [method, path] of [
    ["POST", "/things"],
    ["GET", "/nowhere"],
    ["GET", "/things"],
    ["GET", "/secret"],
    ["GET", "/readyz"],
    ["GET", "/healthz"],
  ] as const) {
    await call(app, method, path);
  }
  await Bun.sleep(20); // onAfterResponse runs after the response is handed over
  const counted = (await registry.getSingleMetric("http_requests_total")?.get())?.values.map(
    (v) => `${v.labels.method} ${v.labels.route} ${v.labels.status}`,
  );
  expect(counted?.sort()).toEqual(
    [
      "POST /things 409",
      "GET unmatched 404",
      "GET unmatched 405",
      "GET /secret 401",
      "GET /readyz 503",
      "GET /healthz 200",
    ].sort(),
  );
});

test("/healthz and the build_info metric name the running build", async () => {
  const { app, registry } = build(true);
  expect(await (await call(app, "GET", "/healthz")).json()).toEqual({
    status: "UP",
    service: "test",
    version: "0.0.0",
    commit: "unknown", // run from source: nothing was embedded
    bun: Bun.version,
  });
  const text = await registry.metrics();
  expect(text, "a service that passes /readyz reports service_ready 1").toContain(
    'service_ready{application="test"} 1',
  );
  expect(await build(false).registry.metrics(), "a failing readiness check reports 0").toContain(
    'service_ready{application="test"} 0',
  );
  expect(text).toContain(
    `build_info{version="0.0.0",commit="unknown",bun_version="${Bun.version}",application="test"} 1`,
  );
});

test("/actuator/health/liveness and /actuator/health/readiness answer as /healthz and /readyz do", async () => {
  for (const ready of [true, false]) {
    const { app } = build(ready);
    for (const [alias, probe] of [
      ["/actuator/health/liveness", "/healthz"],
      ["/actuator/health/readiness", "/readyz"],
    ] as const) {
      const [aliased, original] = [await call(app, "GET", alias), await call(app, "GET", probe)];
      expect(aliased.status, `${alias} (ready: ${ready})`).toBe(original.status);
      expect(await aliased.json()).toEqual(await original.json());
    }
  }
  const notReady = await call(build(false).app, "GET", "/actuator/health/readiness");
  expect(notReady.status, "not ready is 503").toBe(503);
  expect(notReady.headers.get("retry-after"), "with a Retry-After, as every 503").toBe("1");
});

test("an X-Request-Id is echoed when sane and generated otherwise", async () => {
  const { app } = build(true);
  const given = await app.handle(new Request("http://localhost/healthz", { headers: { "x-request-id": "abc-123" } }));
  expect(given.headers.get("x-request-id")).toBe("abc-123");
  const generated = await app.handle(
    new Request("http://localhost/healthz", { headers: { "x-request-id": "bad id with spaces" } }),
  );
  expect(generated.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
});

test("/readyz logs the first failure of a run and the recovery, not every failed probe", async () => {
  const lines: { level: string; msg: string; err?: { stack?: string }; failed_checks?: number }[] = [];
  const log = createLogger({
    level: "info",
    service: "test",
    destination: { write: (line: string) => lines.push(JSON.parse(line)) },
  });
  let ready = false;
  const app = createHttpApp({
    service: "test",
    version: "0.0.0",
    log,
    registry: createRegistry("test"),
    readiness: async () => {
      if (!ready) throw new Error("database down");
    },
  });
  const probe = () => app.handle(new Request("http://localhost/readyz")).then((r) => r.status);
  const flood = async (n: number) => (await Promise.all(Array.from({ length: n }, probe))).every((s) => s === 503);
  expect(await flood(100), "not ready").toBe(true);
  expect(
    lines.map((l) => `${l.level} ${l.msg}`),
    "a flood of unauthenticated probes is one line",
  ).toEqual(["warn not ready"]);
  expect(lines[0]?.err?.stack, "the first failure carries its error").toContain("database down");
  ready = true;
  expect(await probe()).toBe(200);
  expect(await probe()).toBe(200);
  ready = false;
  expect(await flood(10)).toBe(true);
  expect(lines.map((l) => `${l.level} ${l.msg} ${l.failed_checks ?? ""}`.trim())).toEqual([
    "warn not ready",
    "info ready again 100",
    "warn not ready",
  ]);
});
