// This release's write path and the previous release's, side by side on the upgraded schema (a rolling upgrade: both
// serve at once). The same requests at the same instants give the same answers and write the same rows, and a reply
// stored by either release is replayed by the other.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { bundleReply } from "../../src/entitlement/features/bundles/service.ts";
import { changeReply, expiryReply } from "../../src/entitlement/features/entitlements/replies.ts";
import type { ReservationResponse } from "../../src/entitlement/features/points/model.ts";
import { pointsReply } from "../../src/entitlement/features/points/replies.ts";
import { schemaText } from "../../src/entitlement/migrations.ts";
import { executeExpiry } from "../../src/entitlement/work/expiry/queries.ts";
import { claimDueReservations } from "../../src/entitlement/write/point-claim.ts";
import { executeReservation } from "../../src/entitlement/write/point-execute.ts";
import { failReservation } from "../../src/entitlement/write/point-fail.ts";
import { createSql, type Sql } from "../../src/shared/db.ts";
import { migrate } from "../../src/shared/migrate.ts";
import { createEmptyTestDatabase, type TestDatabase } from "../support/infra.ts";
import {
  type Answer,
  at,
  currentAnswer,
  type EntitlementBody,
  extend,
  grant,
  iso,
  previousAnswer,
  type Request,
  revoke,
} from "./answers.ts";
import { previousRelease, previousSchema } from "./previous-release.ts";
import { everyRow, tableColumns } from "./schema.ts";

// Three schemas migrated from empty on a loaded 2-core machine take more than the default 5 s.
setDefaultTimeout(60_000);

type Side = { db: TestDatabase; sql: Sql };
type Release = "previous" | "current";

/** A database at the previous release's schema, upgraded by this release's migration run unless `upgrade` is false. */
async function atPreviousRelease(label: string, upgrade = true): Promise<Side> {
  const db = await createEmptyTestDatabase(label);
  const sql = createSql({ url: db.url, schema: "entitlement", max: 2, applicationName: `test-${label}` });
  await migrate(sql, "entitlement", previousSchema);
  if (upgrade) await migrate(sql, "entitlement", schemaText);
  return { db, sql };
}

/** The previous release on the upgraded schema, this release on it, and the previous release before the upgrade. */
let previous: Side;
let current: Side;
let original: Side;

beforeAll(async () => {
  [previous, current, original] = await Promise.all([
    atPreviousRelease("side_previous"),
    atPreviousRelease("side_current"),
    atPreviousRelease("side_original", false),
  ]);
});

afterAll(async () => {
  for (const side of [previous, current, original].filter(Boolean)) {
    await side.sql.end({ timeout: 5 });
    await side.db.drop();
  }
});

/** The commands of both sides, in order: [key, minute, request]. */
const STEPS: [string, number, Request][] = [
  ["k1", 1, grant("u1", "sword")],
  ["k2", 2, grant("u1", "sword")],
  ["k3", 3, grant("u1", "shield", iso(60 * 48))],
  ["k4", 4, extend("u1", "shield", iso(60 * 72))],
  ["k5", 5, extend("u1", "shield", iso(60 * 24))],
  ["k6", 6, extend("u1", "sword", iso(60 * 24))],
  ["k7", 7, revoke("u1", "sword")],
  ["k8", 8, revoke("u1", "sword")],
  ["k9", 9, extend("u1", "sword", iso(60 * 24))],
  ["k10", 10, revoke("u1", "never-granted")],
  [
    "k11",
    11,
    {
      kind: "BUNDLE",
      body: {
        user_id: "u1",
        stock_keeping_units: ["shield", "bow", "arrow"],
        reason: "bundle",
        purchase_id: "b-1",
        expires_at: iso(60 * 96),
      },
    },
  ],
  ["k12", 12, grant("u2", "late", iso(-60))],
  ["k1", 13, grant("u1", "sword")],
  ["k1", 14, grant("u1", "shield")],
  ["k15", 15, { kind: "RESERVE", body: { user_id: "u3", point_amount: 100, execute_at: iso(600), reason: "gift" } }],
  ["k16", 16, { kind: "RESERVE", body: { user_id: "u4", point_amount: 100, execute_at: iso(600) } }],
  ["k17", 17, { kind: "CANCEL", reservationId: "00000000-0000-4000-8000-00000000cafe" }],
  ["k18", 18, { kind: "RESERVE", body: { user_id: "u6", point_amount: 6, execute_at: iso(600) } }],
  ["k19", 19, { kind: "RESERVE", body: { user_id: "u7", point_amount: 7, execute_at: iso(600) } }],
  ["k20", 20, { kind: "RESERVE", body: { user_id: "u8", point_amount: 8, execute_at: iso(600) } }],
  ["k21", 21, grant("u5", "potion", iso(30))],
];

describe("side by side", () => {
  test("the same requests give the same answers and write the same rows", async () => {
    for (const side of [previous, current, original]) {
      await side.sql`insert into point_balances (user_id, balance, updated_at) values ('u4', 9007199254740950, ${at(0)})`;
    }
    const reservations: string[] = [];
    for (const [key, minute, request] of STEPS) {
      const now = at(minute);
      const answer = await currentAnswer(current.sql, request, key, now);
      const id =
        request.kind === "RESERVE" && "body" in answer
          ? (answer.body as ReservationResponse).reservation_id
          : undefined;
      if (id) reservations.push(id);
      for (const side of [previous, original]) {
        expect(answer, `${key} at minute ${minute}: the same answer`).toEqual(
          await previousAnswer(side.sql, request, key, now, id),
        );
      }
    }
    const cancelled = reservations[3];
    for (const [key, minute] of [
      ["k22", 22],
      ["k23", 23],
    ] as const) {
      const request: Request = { kind: "CANCEL", reservationId: cancelled as string };
      const answer = await currentAnswer(current.sql, request, key, at(minute));
      for (const side of [previous, original]) {
        expect(answer, `${key}: the same cancel`).toEqual(await previousAnswer(side.sql, request, key, at(minute)));
      }
    }
    await schedulerSteps(reservations);
    // Both releases write the same rows on this schema, every column of it (the previous release through its
    // wrappers, which store facts as this release does).
    const rows = normalized(await everyRow(current.sql, "entitlement"));
    expect(rows, "the same rows as the previous release on this schema").toEqual(
      normalized(await everyRow(previous.sql, "entitlement")),
    );
    // Before the upgrade, on the previous release's tables and columns: what a later migration adds is not the
    // previous release's to write, and a record it stored with a reply body holds here the facts this release makes
    // that same reply of.
    const before = normalized(await everyRow(original.sql, "entitlement"));
    const columns = await tableColumns(original.sql, "entitlement");
    expect(
      normalized(withReplies(await everyRow(current.sql, "entitlement")), columns),
      "as before the upgrade",
    ).toEqual(before);
  });
});

describe("one database, both releases", () => {
  test("a reply stored by either release is replayed by the other, byte for byte", async () => {
    const { sql } = current;
    const replayed = (first: Answer): Answer => ("status" in first ? { ...first, kind: "replayed" } : first);
    const reserved = (answer: Answer) => ("body" in answer ? (answer.body as ReservationResponse).reservation_id : "");
    const cases: [string, Request, Release][] = [
      ["x1", grant("u9", "sword"), "previous"],
      ["x2", grant("u9", "sword"), "current"],
      [
        "x3",
        { kind: "BUNDLE", body: { user_id: "u9", stock_keeping_units: ["b", "a"], reason: "r", purchase_id: "p" } },
        "current",
      ],
      [
        "x4",
        { kind: "BUNDLE", body: { user_id: "u9", stock_keeping_units: ["a", "c"], reason: "r", purchase_id: "p" } },
        "previous",
      ],
      ["x5", extend("u9", "sword", iso(2000)), "previous"],
      ["x17", extend("u9", "sword", iso(2100)), "current"],
      ["x18", extend("u9", "sword", iso(1900)), "current"],
      ["x19", extend("u9", "sword", iso(1950)), "previous"],
      ["x6", revoke("u9", "c"), "current"],
      ["x11", grant("u9", "a"), "previous"],
      ["x12", revoke("u9", "c"), "previous"],
      ["x7", { kind: "RESERVE", body: { user_id: "u9", point_amount: 9, execute_at: iso(2000) } }, "previous"],
      [
        "x8",
        { kind: "RESERVE", body: { user_id: "u9", point_amount: 8, execute_at: iso(2000), reason: "r" } },
        "current",
      ],
      ["x13", { kind: "RESERVE", body: { user_id: "u4", point_amount: 100, execute_at: iso(2000) } }, "previous"],
      ["x14", { kind: "RESERVE", body: { user_id: "u4", point_amount: 99, execute_at: iso(2000) } }, "current"],
    ];
    const ids: string[] = [];
    for (const [key, request, first] of cases) {
      const [answer, second] = await storedThenReplayed(sql, first, request, key, 900, crypto.randomUUID());
      if (request.kind === "RESERVE") ids.push(reserved(answer));
      if (["x13", "x14", "x18", "x19"].includes(key)) expect(answer, `${key}: refused`).toMatchObject({ status: 409 });
      expect(second, `${key}, stored by the ${first} release`).toEqual(replayed(answer));
    }
    const cancels = [
      ["x9", 902, ids[0], "current", { kind: "applied", status: 200 }],
      ["x10", 902, ids[1], "previous", { kind: "applied", status: 200 }],
      ["x15", 904, ids[0], "current", { kind: "state_conflict", status: 409 }],
      ["x16", 904, ids[0], "previous", { kind: "state_conflict", status: 409 }],
    ] as const;
    for (const [key, minute, id, first, outcome] of cancels) {
      const request: Request = { kind: "CANCEL", reservationId: id as string };
      const [answer, second] = await storedThenReplayed(sql, first, request, key, minute);
      expect(answer, `${key}: the cancel is ${outcome.kind}`).toMatchObject(outcome);
      expect(second, `${key}, stored by the ${first} release`).toEqual(replayed(answer));
    }
  });
});

/**
 * `request` answered under `key` by the `first` release at `minute`, then by the other a minute later; a reservation
 * the previous release makes gets the id `reservationId`.
 */
async function storedThenReplayed(
  sql: Sql,
  first: Release,
  request: Request,
  key: string,
  minute: number,
  reservationId?: string,
): Promise<[Answer, Answer]> {
  const by = (release: Release, now: Date) =>
    release === "previous"
      ? previousAnswer(sql, request, key, now, reservationId)
      : currentAnswer(sql, request, key, now);
  const answer = await by(first, at(minute));
  return [answer, await by(first === "previous" ? "current" : "previous", at(minute + 1))];
}

/**
 * The scheduler's writes on both sides: an expiry, a reservation executed, one failed for good, and one whose lease
 * ran out on its last attempt ended by the claim.
 */
async function schedulerSteps(reservations: string[]): Promise<void> {
  const [executed, failed, exhausted] = reservations;
  for (const side of [previous, current, original]) {
    await side.sql`update entitlement_expiries set status = 'PROCESSING', locked_by = 'w1' where user_id = 'u5'`;
    await side.sql`update point_reservations set status = 'PROCESSING', locked_by = 'w1'
                   where reservation_id in (${executed as string}, ${failed as string})`;
    await side.sql`update point_reservations set status = 'PROCESSING', locked_by = 'w0', attempt_count = 3,
                   due_at = ${at(700)} where reservation_id = ${exhausted as string}`;
  }
  const expiry = { userId: "u5", sku: "potion", lockedBy: "w1", now: at(40), traceId: "trace-expiry" };
  await executeExpiry(current.sql, expiry);
  const previousExpiry = (sql: Sql) =>
    previousRelease.expireEntitlement(sql, {
      userId: "u5",
      sku: "potion",
      reason: "expiry",
      now: at(40),
      traceId: "trace-expiry",
      traceparent: null,
      payload: {
        event_type: "EntitlementRevoked",
        occurred_at: at(40).toISOString(),
        user_id: "u5",
        source: "expiry",
        trace_id: "trace-expiry",
      },
      lockedBy: "w1",
    });
  const execution = {
    reservationId: executed as string,
    lockedBy: "w1",
    transactionId: "00000000-0000-4000-8000-0000000000a1",
    eventId: "00000000-0000-4000-8000-0000000000e1",
    now: at(601),
    subject: "points.events",
    payload: { event_type: "PointsGranted", user_id: "u3", point_amount: 100, reservation_id: executed as string },
  };
  await executeReservation(current.sql, execution);
  const failure = {
    reservationId: failed as string,
    lockedBy: "w1",
    now: at(602),
    retryAt: null,
    lastError: "broker away",
  };
  await failReservation(current.sql, failure);
  const claim = { now: at(800), leaseUntil: at(810), lockedBy: "w2", limit: 10, maxAttempts: 3 };
  const claimed: unknown[] = await claimDueReservations(current.sql, claim);
  for (const { sql } of [previous, original]) {
    await previousExpiry(sql);
    await previousRelease.executeReservation(sql, execution);
    await previousRelease.failReservation(sql, failure);
    expect(claimed, "the same claim").toEqual(await previousRelease.claimDueReservations(sql, claim));
  }
}

/**
 * Every idempotency record as the previous release stored it: a reply body, made here from the facts if it has them,
 * by this release's reply of the request stored under its key (STEPS; the cancels after them are points commands).
 */
function withReplies(tables: Record<string, unknown[]>): Record<string, unknown[]> {
  // The first request under a key is the one its record stored; a later one is its replay or a key conflict.
  const requests = new Map(STEPS.toReversed().map(([key, , request]) => [key, request]));
  const replyOf = (key: string, facts: unknown) => {
    const request = requests.get(key);
    if (request?.kind === "GRANT" || request?.kind === "REVOKE") return changeReply(request.kind, request.body)(facts);
    if (request?.kind === "BUNDLE") return bundleReply(request.body)(facts);
    if (request?.kind === "EXTEND") return expiryReply(request.body as Required<EntitlementBody>)(facts);
    return pointsReply(facts);
  };
  type Record = { idem_key: string; response_facts?: unknown; response_body: unknown };
  const reply = ({ response_facts: facts, ...record }: Record) =>
    facts ? { ...record, response_body: replyOf(record.idem_key, facts).body } : record;
  return { ...tables, idempotency_keys: ((tables.idempotency_keys ?? []) as Record[]).map(reply) };
}

/**
 * Rows without the ids each insert draws at random and the record's created_at (the database's clock), their keys and
 * the rows in a stable order; with `columns`, only those tables and their columns.
 */
function normalized(tables: Record<string, unknown[]>, columns?: Record<string, string[]>): Record<string, string[]> {
  const random = new Set(["audit_id", "event_id"]);
  const drop = (value: unknown, skip: Set<string>): unknown => {
    if (Array.isArray(value)) return value.map((v) => drop(v, skip));
    if (value === null || typeof value !== "object") return value;
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => !skip.has(k))
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, drop(v, skip)]),
    );
  };
  const only = (name: string, row: unknown): unknown => {
    const keep = columns?.[name];
    if (!keep) return row;
    return Object.fromEntries(Object.entries(row as object).filter(([k]) => keep.includes(k)));
  };
  return Object.fromEntries(
    Object.entries(tables)
      .filter(([name]) => !columns || name in columns)
      .map(([name, rows]) => {
        const skip = name === "idempotency_keys" ? new Set([...random, "created_at"]) : random;
        return [name, rows.map((r) => JSON.stringify(drop(only(name, r), skip))).sort()];
      }),
  );
}
