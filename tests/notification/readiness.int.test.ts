// A database that accepts the connection but never answers: /readyz answers 503 NOT_READY within the readiness
// timeout, so a load balancer's probe gets an answer instead of timing out itself.
import { afterAll, expect, test } from "bun:test";
import { startSilentPostgres } from "../support/silent-server.ts";
import { notificationApp } from "./app.helpers.ts";
import { notificationSql } from "./helpers.ts";

const silent = startSilentPostgres();
const sql = notificationSql(silent.url, 2);
afterAll(async () => {
  await sql.end({ timeout: 0 });
  silent.stop();
});

test("/readyz is 503 NOT_READY within readinessTimeoutMs when the database never answers", async () => {
  const app = notificationApp(sql, {
    consumerReady: () => true,
    readinessTimeoutMs: 300,
  });
  const started = performance.now();
  const reply = await app.handle(new Request("http://localhost/readyz"));
  const waited = performance.now() - started;
  expect(reply.status).toBe(503);
  expect(((await reply.json()) as { code: string }).code).toBe("NOT_READY");
  expect(waited, "bounded by the readiness timeout, far below the pool's 10s connect timeout").toBeLessThan(3_000);
  expect(waited).toBeGreaterThanOrEqual(290);
});
