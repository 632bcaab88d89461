// Builds the configured channel (NOTIFICATION_DELIVERY_CHANNEL), wrapped by failure injection when it is on.
import type { Logger } from "../../shared/logger.ts";
import type { Clock } from "../../shared/runtime.ts";
import type { NotificationConfig } from "../config.ts";
import { withFailureInjection } from "./failure-injection.ts";
import { createLogSender } from "./log.ts";
import type { Sender } from "./sender.ts";
import { createWebhookSender } from "./webhook.ts";

export function createSender(delivery: NotificationConfig["delivery"], log: Logger, now: Clock): Sender {
  const { webhook, failureInjection } = delivery;
  let base: Sender;
  if (delivery.channel === "webhook") {
    // The configuration rules guarantee both for the webhook channel.
    if (!webhook.url || !webhook.secret) throw new Error("webhook channel needs a URL and a secret");
    base = createWebhookSender({ url: webhook.url, secret: webhook.secret, timeoutMs: webhook.timeoutMs, now });
  } else {
    base = createLogSender(log);
  }
  if (!failureInjection.enabled) return base;
  if (failureInjection.userIdPrefix.trim() === "") {
    log.warn("failure injection is enabled but its user id prefix is blank, so it does nothing");
    return base;
  }
  log.warn(
    { user_id_prefix: failureInjection.userIdPrefix },
    "FAILURE INJECTION IS ON: every delivery to a user id with this prefix fails (tests and drills only)",
  );
  return withFailureInjection(base, failureInjection.userIdPrefix);
}
