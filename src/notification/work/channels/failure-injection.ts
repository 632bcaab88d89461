// Failure injection for tests and drills: deliveries to user ids starting with the prefix fail,
// as a retryable error, so they walk the whole retry path into the DLQ. A blank prefix disables it.
import type { Sender } from "./sender.ts";

export function withFailureInjection(sender: Sender, userIdPrefix: string): Sender {
  if (userIdPrefix.trim() === "") return sender;
  return async (d) => {
    if (d.userId.startsWith(userIdPrefix)) {
      throw new Error(`notification delivery failure injection matched userId=${d.userId}`);
    }
    await sender(d);
  };
}
