// `entitlement points stats|requeue <reservation_id>|requeue --failed` (docs/operations.md), in the style of `outbox`:
// one line per fact or change, only the named rows touched, harmless to run twice, stored text escaped.
import type { Subcommand } from "../../shared/cli.ts";
import { type OpsDeps, printable } from "../../shared/ops.ts";
import { type OpsEnv, requeueOutcome, statsOrRequeueSubcommand, statsOrRequeueUsage } from "./context.ts";
import { findReservationStatus, readPointsStats, requeueFailedReservations } from "./points-queries.ts";

export const POINTS_USAGE = statsOrRequeueUsage("points", "<reservation_id>");

export async function printPointsStats({ sql, out }: OpsDeps): Promise<number> {
  const s = await readPointsStats(sql);
  const b = s.byStatus;
  out(
    `point reservations: PENDING=${b.PENDING} PROCESSING=${b.PROCESSING} DONE=${b.DONE} FAILED=${b.FAILED} ` +
      `CANCELLED=${b.CANCELLED}`,
  );
  out(
    s.oldestDue === null
      ? "due now: 0"
      : `due now: ${s.dueNow}, the most overdue ${s.oldestDue.reservationId} ${s.oldestDue.lateSeconds.toFixed(1)}s late`,
  );
  out(`failed reservations: ${b.FAILED}${b.FAILED > 0 ? " (see `points requeue`)" : ""}`);
  return 0;
}

/** Requeues one FAILED reservation or all of them (`"failed"`). */
export async function requeuePoints(
  { sql, out }: OpsDeps,
  target: { reservationId: string } | "failed",
): Promise<number> {
  const reservationId = target === "failed" ? undefined : target.reservationId;
  const rows = await requeueFailedReservations(sql, { reservationId });
  for (const r of rows) {
    out(
      `requeued ${r.reservation_id} (${r.point_amount} points for ${printable(r.user_id)}): FAILED -> PENDING, ` +
        `attempt_count ${r.previous_attempts} -> 0, last error: ${printable(r.last_error)}`,
    );
  }
  const status = () =>
    reservationId === undefined ? Promise.resolve(undefined) : findReservationStatus(sql, reservationId);
  const noun = { noun: "reservation", missing: "point reservation" };
  return requeueOutcome(out, { id: reservationId, requeued: rows.length, ...noun, status });
}

/** The `points` subcommand; opens its own PostgreSQL connection from the service configuration in `env`. */
export function pointsSubcommand(env: OpsEnv = process.env): Subcommand {
  return statsOrRequeueSubcommand(env, {
    name: "points",
    idName: "<reservation_id>",
    stats: printPointsStats,
    requeue: (deps, id) => requeuePoints(deps, id ? { reservationId: id } : "failed"),
  });
}
