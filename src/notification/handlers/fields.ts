// Checks the event handlers share, so that what reaches the database is what it accepts.

const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-](\d{2}):(\d{2}))$/;

/**
 * ISO-8601 instant with a Z or ±hh:mm offset whose every field is in range (no Feb 30, no hour 24), and an offset
 * PostgreSQL accepts (at most ±15:59: `+18:00` is valid ISO-8601 but fails the insert, and so the whole batch).
 */
export function isIsoInstant(text: string): boolean {
  const m = INSTANT.exec(text);
  if (!m) return false;
  const n = (i: number) => Number(m[i]);
  const daysInMonth = new Date(Date.UTC(n(1), n(2), 0)).getUTCDate();
  const offsetOk = m[8] === "Z" || (n(9) <= 15 && n(10) < 60);
  const dateOk = n(1) >= 1 && n(2) >= 1 && n(2) <= 12 && n(3) >= 1 && n(3) <= daysInMonth;
  return dateOk && n(4) < 24 && n(5) < 60 && n(6) < 60 && offsetOk;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Text of `min`..`max` UTF-16 units, well-formed, not blank when required, and without any control character. */
export function isPlainText(value: string, min: number, max: number): boolean {
  if (value.length < min || value.length > max || !value.isWellFormed() || CONTROL.test(value)) return false;
  return min === 0 || value.trim() !== "";
}
