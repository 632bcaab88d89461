// Checks the event handlers share, so that what reaches the database is what it accepts.
import { parseInstant } from "../../../shared/instant.ts";

/**
 * An instant as the Entitlement API accepts one (shared/instant.ts): no Feb 30, no hour 24, an offset PostgreSQL
 * accepts (`+18:00` is valid ISO-8601 but fails the insert, and so the whole batch), a year it stores.
 */
export function isIsoInstant(text: string): boolean {
  return parseInstant(text) !== undefined;
}

/** The text rule of both services (shared/ids.ts): the consumer accepts every id the Entitlement API commits. */
export { isPlainText } from "../../../shared/ids.ts";
