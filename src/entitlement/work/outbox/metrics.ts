// Relay metrics (docs/operations.md). The FAILED gauge is read at scrape time, so a batch never pays
// for a count(*) it does not need.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { secondsBetween } from "../../../shared/metrics.ts";

export type PublishResult = "published" | "retry_scheduled" | "failed";

export type OutboxMetrics = {
  /** occurred_at → claim: how long the event waited in the table. */
  observeBacklogAge(occurredAt: Date, claimedAt: Date): void;
  /** occurred_at → PubAck: the delay a consumer sees. */
  observePublishDelay(occurredAt: Date, ackedAt: Date): void;
  countPublish(result: PublishResult, n?: number): void;
  /** A batch that failed as a whole (database or connection trouble); the loop retries after the poll interval. */
  countRelayError(): void;
};

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900];

export function createOutboxMetrics(registry: Registry, countFailed: () => Promise<number>): OutboxMetrics {
  const backlogAge = new Histogram({
    name: "entitlement_outbox_backlog_age_seconds",
    help: "Time from an event's occurred_at to its claim by the relay.",
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const publishDelay = new Histogram({
    name: "entitlement_outbox_publish_delay_seconds",
    help: "Time from an event's occurred_at to its JetStream PubAck.",
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const publishTotal = new Counter({
    name: "entitlement_outbox_publish_total",
    help: "Outcomes of outbox publish attempts.",
    labelNames: ["result"] as const,
    registers: [registry],
  });
  const relayErrors = new Counter({
    name: "entitlement_outbox_relay_errors_total",
    help: "Relay batches that failed as a whole and were retried after the poll interval.",
    registers: [registry],
  });
  new Gauge({
    name: "entitlement_outbox_failed_current",
    help: "Outbox events in status FAILED (they need an operator).",
    registers: [registry],
    async collect() {
      // A scrape while the database is down keeps the last value rather than failing the whole /metrics page.
      const n = await countFailed().catch(() => undefined);
      if (n !== undefined) this.set(n);
    },
  });
  return {
    observeBacklogAge(occurredAt, claimedAt) {
      const s = secondsBetween(occurredAt, claimedAt);
      if (s !== undefined) backlogAge.observe(s);
    },
    observePublishDelay(occurredAt, ackedAt) {
      const s = secondsBetween(occurredAt, ackedAt);
      if (s !== undefined) publishDelay.observe(s);
    },
    countPublish(result, n = 1) {
      if (n > 0) publishTotal.inc({ result }, n);
    },
    countRelayError() {
      relayErrors.inc();
    },
  };
}
