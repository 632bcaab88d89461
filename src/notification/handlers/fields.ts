// Checks the event handlers share, so that what reaches the database is what it accepts.
import { parseInstant } from "../../shared/instant.ts";

/**
 * An instant as the Entitlement API accepts one (shared/instant.ts): no Feb 30, no hour 24, an offset PostgreSQL
 * accepts (`+18:00` is valid ISO-8601 but fails the insert, and so the whole batch), a year it stores.
 */
export function isIsoInstant(text: string): boolean {
  return parseInstant(text) !== undefined;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Text of `min`..`max` UTF-16 units, well-formed, not blank when required, and without any control character. */
export function isPlainText(value: string, min: number, max: number): boolean {
  if (value.length < min || value.length > max || !value.isWellFormed() || CONTROL.test(value)) return false;
  return min === 0 || value.trim() !== "";
}
