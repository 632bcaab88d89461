// The players' live streams, for the dashboard: how many are open, what they send, how they resume and end.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export function createPlayerMetrics(registry: Registry) {
  return {
    open: new Gauge({
      name: "notification_player_streams_open",
      help: "Live player streams open on this process.",
      registers: [registry],
    }),
    eventsSent: new Counter({
      name: "notification_player_stream_events_total",
      help: "Notifications sent on live player streams.",
      registers: [registry],
    }),
    delay: new Histogram({
      name: "notification_player_stream_delay_seconds",
      help: "Seconds from a notification's storing to its sending on a stream (resumed ones included).",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 30, 300],
      registers: [registry],
    }),
    resumes: new Counter({
      name: "notification_player_stream_resumes_total",
      help: "Streams opened with a Last-Event-ID.",
      registers: [registry],
    }),
    resets: new Counter({
      name: "notification_player_stream_resets_total",
      help: "Resumes answered with `event: reset` (retention had deleted what the client asked for).",
      registers: [registry],
    }),
    closes: new Counter({
      name: "notification_player_stream_closes_total",
      help: "Streams ended, by reason: client, expired (the token's exp), replaced (over the per-user limit), slow_reader, shutdown.",
      labelNames: ["reason"] as const,
      registers: [registry],
    }),
    refused: new Counter({
      name: "notification_player_streams_refused_total",
      help: "Streams refused with 503 because this process holds NOTIFICATION_STREAM_MAX already.",
      registers: [registry],
    }),
    signals: new Counter({
      name: "notification_player_signals_total",
      help: "Player signals between replicas over core NATS, by direction (published, received, dropped: NATS was away).",
      labelNames: ["direction"] as const,
      registers: [registry],
    }),
  };
}
export type PlayerMetrics = ReturnType<typeof createPlayerMetrics>;
