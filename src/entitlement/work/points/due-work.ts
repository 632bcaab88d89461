// Point reservations as a kind of the scheduler's due work (scheduler/kind.ts): claimed when execute_at has come,
// executed into the ledger, the balance and a PointsGranted event in one transaction (due-queries.ts).
import type { Db } from "../../../shared/db.ts";
import { type ClaimedReservation, claimDueReservations } from "../../write/point-claim.ts";
import { executeReservation } from "../../write/point-execute.ts";
import { failReservation } from "../../write/point-fail.ts";
import type { ClaimArgs, ClaimedItem, DueWorkKind, ExecuteOutcome, Failure } from "../scheduler/kind.ts";
import { reservationReads } from "./due-queries.ts";

export type PointsDueSettings = {
  /** Subject of PointsGranted events (ENTITLEMENT_POINTS_NATS_SUBJECT), stored with each outbox row. */
  subject: string;
};

type DueReservation = ClaimedItem & { reservation: ClaimedReservation };

export function pointReservationsDue(settings: PointsDueSettings): DueWorkKind<DueReservation> {
  return {
    name: "points",
    ...reservationReads,
    async claim(db: Db, args: ClaimArgs): Promise<DueReservation[]> {
      const rows = await claimDueReservations(db, args);
      return rows.map((r) => ({
        id: r.reservationId,
        attemptCount: r.attemptCount,
        scheduledAt: r.executeAt,
        exhausted: r.status === "FAILED",
        lockKey: r.userId,
        reservation: r,
      }));
    },
    async execute(tx: Db, item: DueReservation, ctx): Promise<ExecuteOutcome> {
      const r = item.reservation;
      const eventId = crypto.randomUUID();
      const result = await executeReservation(tx, {
        reservationId: r.reservationId,
        lockedBy: ctx.lockedBy,
        transactionId: crypto.randomUUID(),
        eventId,
        now: ctx.now,
        subject: settings.subject,
        payload: {
          event_id: eventId,
          event_type: "PointsGranted",
          occurred_at: ctx.now.toISOString(),
          user_id: r.userId,
          point_amount: r.pointAmount,
          reservation_id: r.reservationId,
          trace_id: r.traceId ?? r.reservationId,
        },
      });
      return result.finalized === 1 ? "done" : "lost";
    },
    fail: (db: Db, item: DueReservation, f: Failure) => failReservation(db, { ...f, reservationId: item.id }),
  };
}
