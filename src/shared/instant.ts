// The one reading of a date-time both services accept from outside (request bodies, cursors, events): ISO-8601 with a
// date, a time and an offset, every field a real calendar value. JavaScript's Date rolls February 30th over to March
// and takes year 0, which PostgreSQL refuses (SQLSTATE 22008), so its parser alone lets a request reach a 500.

/** Date, `T`, time (seconds and up to nine fraction digits optional), then `Z` or ±hh:mm; `t` and `z` too. */
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:Z|([+-])(\d{2}):(\d{2}))$/i;

/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z: an instant whose UTC form PostgreSQL reads back as written. */
const EARLIEST = startOfYear(1);
const LATEST = startOfYear(10_000) - 1;

/** Date.UTC reads the years 0–99 as 1900–1999; setUTCFullYear does not. */
function startOfYear(year: number): number {
  const at = new Date(Date.UTC(2000, 0, 1));
  at.setUTCFullYear(year);
  return at.getTime();
}

function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
}

/**
 * The instant `text` names, or undefined when it names none: a month 1–12, a day that month has (no February 30th, no
 * February 29th outside leap years), hours below 24, minutes and seconds below 60, an offset PostgreSQL accepts (at
 * most ±15:59; `+18:00` is valid ISO-8601 but fails the insert), and in UTC between the years 0001 and 9999, so that
 * its `toISOString()` is a timestamp PostgreSQL stores.
 */
export function parseInstant(text: string): Date | undefined {
  const m = INSTANT.exec(text);
  if (!m) return undefined;
  const field = (i: number) => Number(m[i] ?? 0);
  const [year, month, day, hour, minute, second] = [field(1), field(2), field(3), field(4), field(5), field(6)];
  const millis = Number((m[7] ?? "").padEnd(3, "0").slice(0, 3));
  const [offsetHours, offsetMinutes] = [field(9), field(10)];
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 15 || offsetMinutes > 59) return undefined;
  const at = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, millis));
  at.setUTCFullYear(year);
  const offsetMs = (m[8] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  const utc = at.getTime() - offsetMs;
  return utc < EARLIEST || utc > LATEST ? undefined : new Date(utc);
}

/** `from` plus `years` calendar years, on the same day of the month (February 29th becomes the 28th if need be). */
export function addCalendarYears(from: Date, years: number): Date {
  const at = new Date(from.getTime());
  const month = at.getUTCMonth();
  at.setUTCFullYear(at.getUTCFullYear() + years);
  if (at.getUTCMonth() !== month) at.setUTCDate(0);
  return at;
}
