// deploy/grafana/dashboard.json and deploy/prometheus/alerts.yml read only metrics the services really export: both
// compiled executables serve real traffic (grants, a revoke, a conflict, deliveries), then each /metrics is scraped
// and every metric name in every panel query and alert expression must be declared there.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { waitUntil } from "../support/wait.ts";
import { command, type Pair, startPair } from "./pair.ts";
import { exportedMetricNames, metricNamesInExpr } from "./promql.ts";

const root = resolve(import.meta.dir, "../..");
/** Series Prometheus makes itself for every target. */
const SYNTHETIC = new Set(["up", "scrape_duration_seconds", "scrape_samples_scraped"]);

type Panel = { title: string; type: string; targets?: { expr: string }[] };
const dashboard = JSON.parse(readFileSync(resolve(root, "deploy/grafana/dashboard.json"), "utf8")) as {
  panels: Panel[];
};
const alertExprs = [
  ...readFileSync(resolve(root, "deploy/prometheus/alerts.yml"), "utf8").matchAll(
    /expr: (?:\|\n((?: {10,}.*\n)+)|(.+))/g,
  ),
].map((m) => (m[1] ?? m[2] ?? "").trim());

let pair: Pair;
let exported: Set<string>;
let scraped: string;

beforeAll(async () => {
  pair = await startPair({ env: { NOTIFICATION_DEBUG_API_ENABLED: "false" } });
  const base = pair.entitlement.url;
  const item = { stock_keeping_unit: "sku-1", reason: "purchase", purchase_id: "p-1" };
  for (let i = 0; i < 5; i++)
    expect((await command(base, "grants", `g${i}`, { user_id: `u${i}`, ...item })).status).toBe(200);
  expect((await command(base, "revokes", "r0", { user_id: "u0", ...item })).status).toBe(200);
  expect((await command(base, "grants", "conflict", { user_id: "u1", ...item })).status).toBe(409);
  await waitUntil(
    async () => (await (await fetch(`${pair.notification.url}/metrics`)).text()).includes('result="sent"'),
    "notifications delivered",
  );
  const pages = await Promise.all(
    [pair.entitlement.url, pair.notification.url].map(async (u) => (await fetch(`${u}/metrics`)).text()),
  );
  scraped = pages.join("\n");
  exported = new Set([...pages.flatMap((p) => [...exportedMetricNames(p)]), ...SYNTHETIC]);
}, 240_000);

afterAll(async () => {
  await pair?.close();
});

test("the dashboard has panels with queries, and every query's metrics are exported", () => {
  const panels = dashboard.panels.filter((p) => p.type !== "row");
  expect(panels.length).toBeGreaterThan(10);
  const missing: string[] = [];
  for (const panel of panels) {
    expect(panel.targets?.length ?? 0, `panel "${panel.title}" has a query`).toBeGreaterThan(0);
    for (const { expr } of panel.targets ?? []) {
      const names = metricNamesInExpr(expr);
      expect(names.length, `"${panel.title}": ${expr} reads a metric`).toBeGreaterThan(0);
      for (const name of names) if (!exported.has(name)) missing.push(`${panel.title}: ${name}`);
    }
  }
  expect(missing, "panel metrics that no service exports").toEqual([]);
});

test("every alert expression's metrics are exported", () => {
  expect(alertExprs.length).toBeGreaterThan(10);
  const missing = alertExprs.flatMap((e) => metricNamesInExpr(e).filter((n) => !exported.has(n)));
  expect(missing, "alert metrics that no service exports").toEqual([]);
});

test("the traffic shows up in the series the dashboard plots", () => {
  for (const series of [
    /^entitlement_command_total\{action="GRANT",result="success"[^}]*\} 5$/m,
    /^entitlement_outbox_publish_total\{result="published"[^}]*\} [1-9]/m,
    /^notification_delivery_total\{result="sent"[^}]*\} [1-9]/m,
    /^notification_consumer_pending_messages\{[^}]*\} \d+$/m,
    /^build_info\{version="[^"]+",commit="[0-9a-f]{12}(-dirty)?",bun_version="[^"]+",application="(entitlement|notification)"\} 1$/m,
    /^service_ready\{application="notification"\} 1$/m,
  ]) {
    expect(scraped).toMatch(series);
  }
});
