// The `log` channel: one structured line per delivery, a send simulated in the log.
import type { Logger } from "../../../shared/logger.ts";
import { activeTraceId } from "../../../shared/trace-context.ts";
import { type Sender, traceIdOf } from "./sender.ts";

/**
 * Inside the delivery's span the logger adds trace_id and span_id itself; the event's own trace_id is added as
 * `event_trace_id` only when it differs (an X-Trace-Id that is no W3C trace id), or as `trace_id` outside a span.
 */
function traceFields(d: Parameters<Sender>[0]): Record<string, string | undefined> {
  const eventTraceId = traceIdOf(d);
  const active = activeTraceId();
  if (!active) return { trace_id: eventTraceId };
  return eventTraceId && eventTraceId !== active ? { event_trace_id: eventTraceId } : {};
}

export function createLogSender(log: Logger): Sender {
  return async (d) => {
    log.info(
      { notification_id: d.notificationId, event_id: d.eventId, user_id: d.userId, type: d.type, ...traceFields(d) },
      "notification delivered",
    );
  };
}
