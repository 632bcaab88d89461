// What a delivery channel receives and how it reports an outcome: resolve = delivered; throw = retry later;
// throw PermanentDeliveryError = never retry (FAILED and DLQ at once).
export type Delivery = {
  notificationId: string;
  eventId: string;
  userId: string;
  type: string;
  occurredAt: Date;
  payload: Record<string, unknown>;
};

export type Sender = (delivery: Delivery) => Promise<void>;

export class PermanentDeliveryError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "PermanentDeliveryError";
  }
}

/** The trace id the event carried, for log correlation. */
export function traceIdOf(delivery: Delivery): string | undefined {
  const value = delivery.payload.trace_id;
  return typeof value === "string" && value !== "" ? value : undefined;
}
