// One claim and every delivery of it, awaited together, as a test drives the delivery worker's steps by hand.
import type { DeliveryDeps } from "../../src/notification/work/delivery/deps.ts";
import { claimDue, deliverOne } from "../../src/notification/work/delivery/service.ts";

/** Returns how many were claimed; throws only if the claim does. */
export async function deliverBatch(deps: DeliveryDeps): Promise<number> {
  const claimed = await claimDue(deps, deps.batchSize);
  await Promise.all(claimed.map((n) => deliverOne(deps, n)));
  return claimed.length;
}
