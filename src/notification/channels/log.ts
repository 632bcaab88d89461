// The `log` channel: one structured line per delivery (the reference's simulated send).
import type { Logger } from "../../shared/logger.ts";
import { type Sender, traceIdOf } from "./sender.ts";

export function createLogSender(log: Logger): Sender {
  return async (d) => {
    log.info(
      {
        notification_id: d.notificationId,
        event_id: d.eventId,
        user_id: d.userId,
        type: d.type,
        trace_id: traceIdOf(d),
      },
      "notification delivered",
    );
  };
}
