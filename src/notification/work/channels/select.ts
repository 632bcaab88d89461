// Builds the configured channel (NOTIFICATION_DELIVERY_CHANNEL), wrapped by failure injection when it is on.
import type { Logger } from "../../../shared/logger.ts";
import type { Clock } from "../../../shared/runtime.ts";
import { withFailureInjection } from "./failure-injection.ts";
import { createLogSender } from "./log.ts";
import type { Sender } from "./sender.ts";
import { createWebhookSender } from "./webhook.ts";

/** The channel's part of the delivery settings (config.ts). */
export type ChannelSettings = {
  channel: "log" | "webhook";
  failureInjection: { enabled: boolean; userIdPrefix: string };
  webhook: { url?: string; secret?: string; timeoutMs: number };
};

export function createSender(delivery: ChannelSettings, log: Logger, now: Clock): Sender {
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
