// Differences between NATS server versions that change what this service may send.
import type { NatsConnection } from "@nats-io/transport-node";

/**
 * `+TERM <reason>` is understood from nats-server 2.10; an older server ignores the whole acknowledgement (measured on
 * 2.9.10: no MSG_TERMINATED advisory, the message comes back after ack_wait), so there we term without a reason.
 */
export function termTakesReason(nc: Pick<NatsConnection, "info">): boolean {
  const match = /^(\d+)\.(\d+)/.exec(nc.info?.version ?? "");
  if (!match) return false;
  const major = Number(match[1]);
  return major > 2 || (major === 2 && Number(match[2]) >= 10);
}
