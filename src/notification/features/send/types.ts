// Which notification types a caller may name: in a send (POST /v1/notifications) and in an endpoint's event_types.
// The built-in types are the ones Notification makes from events; a send may not impersonate them.
import { NOTIFICATION_TYPES } from "../../intake/consumer/handler.ts";

/** A letter, then up to 63 letters, digits, `_`, `.` or `-`. */
export const TYPE_PATTERN = "^[A-Za-z][A-Za-z0-9_.-]{0,63}$";
const TYPE = new RegExp(TYPE_PATTERN);
export const TYPE_RULE = "a letter, then at most 63 letters, digits, _, . or -";

const BUILT_IN = new Map<string, string>(NOTIFICATION_TYPES.map((t) => [t.toLowerCase(), t]));

/**
 * Why `value` cannot be a send's `type`, naming the field as `field`: not a string, not the rule, a built-in type in
 * any case. Undefined: it can.
 */
export function sendTypeProblem(field: string, value: unknown): string | undefined {
  if (typeof value !== "string") return `${field} must be a string`;
  if (!TYPE.test(value)) return `${field} must be ${TYPE_RULE}`;
  const builtIn = BUILT_IN.get(value.toLowerCase()) ?? misspelledBuiltIn(value);
  if (builtIn) return `${field} must not be ${builtIn} or a near spelling of it: Notification makes that type itself`;
  return undefined;
}

/** Levenshtein distance, case-insensitive: how far a name is from a built-in type's. */
function distance(a: string, b: string): number {
  const [x, y] = [a.toLowerCase(), b.toLowerCase()];
  let row = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const next = [i];
    for (let j = 1; j <= y.length; j++) {
      next[j] = Math.min(
        (row[j] ?? 0) + 1,
        (next[j - 1] ?? 0) + 1,
        (row[j - 1] ?? 0) + (x[i - 1] === y[j - 1] ? 0 : 1),
      );
    }
    row = next;
  }
  return row[y.length] ?? 0;
}

/** The built-in type `text` most likely misspells (another case, or at most two edits away), if any. */
function misspelledBuiltIn(text: string): string | undefined {
  return NOTIFICATION_TYPES.find((t) => t !== text && distance(t, text) <= 2);
}

const VALID = `a built-in type (${NOTIFICATION_TYPES.join(", ")}) or a type of your own: ${TYPE_RULE}`;

/**
 * Why `value` cannot be listed in an endpoint's event_types: a built-in type as it is spelled, or any type a send may
 * name. A name within two edits of a built-in type (another case included) is most likely a typo: it is refused,
 * naming the type meant, since an endpoint subscribed to a typo would silently receive nothing.
 */
export function endpointTypeProblem(field: string, value: unknown): string | undefined {
  if (typeof value !== "string") return `${field} must be ${VALID}`;
  if ((NOTIFICATION_TYPES as readonly string[]).includes(value)) return undefined;
  const meant = misspelledBuiltIn(value);
  if (meant)
    return `${field} ${JSON.stringify(value)} is not a notification type; did you mean ${meant}? Valid: ${VALID}`;
  if (!TYPE.test(value)) return `${field} ${JSON.stringify(value)} is not a notification type; valid: ${VALID}`;
  return undefined;
}
