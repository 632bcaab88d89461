// Prometheus metrics with prom-client. Each app gets its own Registry (tests build many apps in one process).
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { BuildInfo } from "./build-info.ts";

export function createRegistry(service: string, options: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ application: service });
  // The event-loop delay histogram samples on a timer: prom-client's default of every 10 ms woke an idle service 100
  // times a second and was most of its CPU at idle (docs/benchmarks.md). Once a second still catches every stall longer
  // than a second and samples shorter ones.
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 1_000 });
  return registry;
}

export function httpMetrics(registry: Registry) {
  const requests = new Counter({
    name: "http_requests_total",
    help: "HTTP requests by method, route and status.",
    labelNames: ["method", "route", "status"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "http_request_duration_seconds",
    help: "HTTP request duration.",
    labelNames: ["method", "route"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  return {
    observe(method: string, route: string, status: number, ms: number) {
      requests.inc({ method, route, status: String(status) });
      duration.observe({ method, route }, ms / 1000);
    },
  };
}

/** `build_info{version,commit,bun_version} 1`: which build each instance runs, for dashboards and rollouts. */
export function buildInfoMetric(registry: Registry, build: BuildInfo): void {
  new Gauge({
    name: "build_info",
    help: "The running build: project version, git commit and Bun version (always 1).",
    labelNames: ["version", "commit", "bun_version"] as const,
    registers: [registry],
  }).set({ version: build.version, commit: build.commit, bun_version: build.bun }, 1);
}

/**
 * `service_ready` 1 or 0: the /readyz check, run at each scrape (a `select 1`, every 15 s or so), so an alert needs
 * no probe exporter to see a service that runs but cannot work.
 */
export function readinessMetric(registry: Registry, readiness: () => Promise<void>): void {
  new Gauge({
    name: "service_ready",
    help: "1 when the service passes its readiness check (what /readyz answers 200 for), else 0.",
    registers: [registry],
    async collect() {
      this.set(
        await readiness().then(
          () => 1,
          () => 0,
        ),
      );
    },
  });
}

/**
 * `nats_connected` 1 or 0: whether the NATS link is up now. Entitlement stays ready while NATS is away (its outbox
 * keeps the events), so this gauge, not /readyz, is what shows an unreachable NATS; the log has one warning per outage.
 */
export function natsConnectedMetric(registry: Registry, connected: () => boolean): void {
  new Gauge({
    name: "nats_connected",
    help: "1 while the NATS connection is up, 0 before the first connection and during an outage.",
    registers: [registry],
    collect() {
      this.set(connected() ? 1 : 0);
    },
  });
}

/** Seconds between two instants for latency histograms; undefined when negative or unknown. */
export function secondsBetween(from: Date | undefined, to: Date): number | undefined {
  if (!from || Number.isNaN(from.getTime())) return undefined;
  const seconds = (to.getTime() - from.getTime()) / 1000;
  return seconds >= 0 ? seconds : undefined;
}
