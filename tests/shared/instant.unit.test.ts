// The one date-time reading both services share: what it accepts is a real instant PostgreSQL stores as written, what
// it refuses never reaches the database (a 500 for a request, a terminated event for the consumer).
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { isIsoInstant } from "../../src/notification/intake/handlers/fields.ts";
import { addCalendarYears, parseInstant } from "../../src/shared/instant.ts";

describe("parseInstant", () => {
  test.each([
    ["2026-01-17T00:00:00Z", "2026-01-17T00:00:00.000Z"],
    ["2026-01-17T09:00:00+09:00", "2026-01-17T00:00:00.000Z"],
    ["2026-01-17t09:00z", "2026-01-17T09:00:00.000Z"],
    ["2024-02-29T23:59:59.123456789-01:30", "2024-03-01T01:29:59.123Z"],
    ["0001-01-01T00:00:00-01:00", "0001-01-01T01:00:00.000Z"],
    ["9999-12-31T23:59:59Z", "9999-12-31T23:59:59.000Z"],
  ])("reads %p as %p", (text, iso) => expect(parseInstant(text)?.toISOString()).toBe(iso));

  test.each([
    "2027-02-30T00:00:00+01:00",
    "2025-02-29T00:00:00Z",
    "1900-02-29T00:00:00Z",
    "2026-04-31T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-01-17T24:00:00Z",
    "2026-01-17T00:60:00Z",
    "2026-01-17T00:00:60Z",
    "0000-01-01T00:00:00Z",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-15:59",
    "2026-01-17T00:00:00+16:00",
    "2026-01-17T00:00:00",
    "2026-01-17 00:00:00Z",
    " 2026-01-17T00:00:00Z",
  ])("refuses %p", (text) => {
    expect(parseInstant(text)).toBeUndefined();
    expect(isIsoInstant(text), "Notification applies the same rule").toBe(false);
  });

  test("agrees with Date on every real instant, and refuses every day a month does not have", () => {
    const two = (n: number) => String(n).padStart(2, "0");
    fc.assert(
      fc.property(
        fc.record({
          year: fc.integer({ min: 1970, max: 9998 }),
          month: fc.integer({ min: 1, max: 12 }),
          day: fc.integer({ min: 1, max: 31 }),
          hour: fc.integer({ min: 0, max: 23 }),
          minute: fc.integer({ min: 0, max: 59 }),
          offset: fc.integer({ min: -15 * 60 - 59, max: 15 * 60 + 59 }),
        }),
        ({ year, month, day, hour, minute, offset }) => {
          const sign = offset < 0 ? "-" : "+";
          const zone = `${sign}${two(Math.floor(Math.abs(offset) / 60))}:${two(Math.abs(offset) % 60)}`;
          const text = `${year}-${two(month)}-${two(day)}T${two(hour)}:${two(minute)}:00${zone}`;
          const exists = new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day;
          const parsed = parseInstant(text);
          if (!exists) expect(parsed, text).toBeUndefined();
          else expect(parsed?.getTime(), text).toBe(new Date(text).getTime());
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

test("addCalendarYears counts calendar years, not 366-day ones; February 29th becomes the 28th", () => {
  expect(addCalendarYears(new Date("2026-11-26T10:00:00Z"), 10).toISOString()).toBe("2036-11-26T10:00:00.000Z");
  expect(addCalendarYears(new Date("2024-02-29T10:00:00Z"), 10).toISOString()).toBe("2034-02-28T10:00:00.000Z");
});
