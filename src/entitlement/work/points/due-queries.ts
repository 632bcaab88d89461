// The reads of the scheduler's point-reservation kind (due-work.ts): the ones every kind's table answers alike
// (scheduler/kind.ts). Its writes, the claim, the execution and a failed attempt, are calls of write/point-claim.ts,
// point-execute.ts and point-fail.ts.
import { dueTableReads } from "../scheduler/kind.ts";

export const reservationReads = dueTableReads("point_reservations");
