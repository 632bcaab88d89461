// A points command is one call of `point_command` (db/entitlement/011_one_write_path.sql): the key's lock and live
// record, the reservation's insert or cancel with its audit row, and the idempotency record, one statement and one
// round trip, its own transaction.
import type { Db } from "../../shared/db.ts";
import { type CommandOutcome, type IdempotencyArgs, idempotencyParams, OUTCOME_COLUMNS } from "./run.ts";

export type PointCommandCall =
  | {
      action: "RESERVE";
      reservationId: string;
      userId: string;
      pointAmount: number;
      executeAt: Date;
      reason: string | null;
    }
  | { action: "CANCEL"; reservationId: string };

export async function runPointCommand(
  db: Db,
  c: PointCommandCall & { now: Date; traceId: string; idempotency: IdempotencyArgs },
): Promise<CommandOutcome> {
  const r = c.action === "RESERVE" ? c : undefined;
  const [row] = await db<CommandOutcome[]>`
    select ${OUTCOME_COLUMNS(db)}
    from point_command(
      p_action => ${c.action}::text,
      p_reservation_id => ${c.reservationId}::uuid,
      p_user_id => ${r?.userId ?? null}::text,
      p_point_amount => ${r?.pointAmount ?? null}::bigint,
      p_execute_at => ${r?.executeAt ?? null}::timestamptz,
      p_reason => ${r?.reason ?? null}::text,
      p_now => ${c.now}::timestamptz,
      p_trace_id => ${c.traceId}::text,
      ${idempotencyParams(db, c.idempotency)})`;
  if (!row) throw new Error("point_command returned no row");
  return row;
}
