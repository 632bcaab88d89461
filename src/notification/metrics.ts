// Notification metrics (docs/operations.md, docs/slo.md), registered on the app's own registry.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** The registered webhook endpoints' deliveries and auto-disable (endpoints/). */
function endpointMetrics(registry: Registry) {
  return {
    endpointDelivery: new Counter({
      name: "notification_webhook_endpoint_deliveries_total",
      help: "Attempts to deliver to registered webhook endpoints: sent, failed (the delivery ended FAILED), retry_scheduled or expired (past the notification's expires_at, not sent).",
      labelNames: ["result"] as const,
      registers: [registry],
    }),
    pushes: new Counter({
      name: "notification_pushes_total",
      help: "Pushes to players' devices by platform (webpush, fcm) and outcome: sent, retry (429, 5xx, no answer), failed (another refusal, or the last attempt), gone (the device was deleted), expired (past expires_at, not sent), skipped (the notification no longer exists).",
      labelNames: ["platform", "outcome"] as const,
      registers: [registry],
    }),
    endpointsDisabled: new Counter({
      name: "notification_webhook_endpoints_disabled_total",
      help: "Webhook endpoints disabled because every attempt failed for NOTIFICATION_ENDPOINT_DISABLE_AFTER.",
      registers: [registry],
    }),
  };
}

export function createNotificationMetrics(registry: Registry) {
  return {
    delivery: new Counter({
      name: "notification_delivery_total",
      help: "Delivery outcomes: sent, failed (moved to the DLQ), retry_scheduled or expired (past expires_at, not sent).",
      labelNames: ["result"] as const,
      registers: [registry],
    }),
    e2eDelay: new Histogram({
      name: "notification_delivery_e2e_delay_seconds",
      help: "Seconds from the event's occurred_at to the successful send.",
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
      registers: [registry],
    }),
    backlog: new Gauge({
      name: "notification_backlog_current",
      help: "Notifications claimable right now (due PENDING plus lease-expired PROCESSING).",
      registers: [registry],
    }),
    dlq: new Counter({
      name: "notification_dlq_total",
      help: "Notifications moved to notification_dlq.",
      registers: [registry],
    }),
    events: new Counter({
      name: "notification_events_total",
      help: "Events consumed, by source (entitlement, matchmaking): created, duplicate, terminated or nak.",
      labelNames: ["source", "result"] as const,
      registers: [registry],
    }),
    notificationsCreated: new Counter({
      name: "notification_notifications_created_total",
      help: "Notifications created from consumed events, by source (a matchmaking event yields one per player).",
      labelNames: ["source"] as const,
      registers: [registry],
    }),
    // Read from the last message of each batch (JetStream's num_pending), so it costs no request; while nothing is
    // fetched it keeps its last value, which is what a lag alert wants when the consumer stalls.
    consumerPending: new Gauge({
      name: "notification_consumer_pending_messages",
      help: "Messages in the stream not yet delivered to the durable consumer, by source, as of the last batch fetched.",
      labelNames: ["source"] as const,
      registers: [registry],
    }),
    natsDlq: new Counter({
      name: "notification_nats_dlq_total",
      help: "JetStream advisories recorded in notification_nats_dlq, by kind and by source of the given-up message.",
      labelNames: ["kind", "source"] as const,
      registers: [registry],
    }),
    ...endpointMetrics(registry),
  };
}
export type NotificationMetrics = ReturnType<typeof createNotificationMetrics>;
