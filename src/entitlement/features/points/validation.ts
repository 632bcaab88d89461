// Input checks of the points API at the edge, each failure a 400 naming the field (docs/api.md).
import { badRequest } from "../../../shared/http/errors.ts";
import { decodeCursor, parseLimit } from "../../../shared/http/paging.ts";
import { pathParam } from "../../../shared/http/path.ts";
import { parseInstant } from "../../../shared/instant.ts";
import { UserId } from "../entitlements/model.ts";
import { checkField } from "../entitlements/validation.ts";
import { MAX_AHEAD_MS, MAX_POINT_AMOUNT, MAX_REASON_LENGTH, type ReservationInput } from "./model.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const REASON = { ...UserId, maxLength: MAX_REASON_LENGTH };

export function checkPointAmount(value: unknown): number {
  if (value === undefined || value === null) throw badRequest("point_amount is required");
  if (typeof value !== "number" || !Number.isInteger(value)) throw badRequest("point_amount must be an integer");
  if (value < 1 || value > MAX_POINT_AMOUNT) throw badRequest(`point_amount must be between 1 and ${MAX_POINT_AMOUNT}`);
  return value;
}

/** The instant to execute at: a past one means now (as soon as possible); more than 366 days ahead is refused. */
export function checkExecuteAt(value: unknown, now: Date): Date {
  if (value === undefined || value === null) throw badRequest("execute_at is required");
  if (typeof value !== "string") throw badRequest("execute_at must be a string");
  // A real instant with an offset (shared/instant.ts): a local time would be read in the server's zone.
  const at = parseInstant(value);
  if (!at) {
    throw badRequest("execute_at must be an ISO-8601 date-time with an offset, e.g. 2026-01-15T10:00:00+09:00");
  }
  if (at.getTime() - now.getTime() > MAX_AHEAD_MS) throw badRequest("execute_at must be at most 366 days ahead");
  return at.getTime() < now.getTime() ? now : at;
}

/** The reservation body, fields in schema order; the first bad one is reported. Unknown fields are ignored. */
export function checkReservationBody(body: Record<string, unknown>, now: Date): ReservationInput {
  const userId = checkField("user_id", UserId, body.user_id);
  const pointAmount = checkPointAmount(body.point_amount);
  const executeAt = body.execute_at;
  // Kept as sent (the request hash covers it); resolved against the clock again when the command runs (service.ts).
  checkExecuteAt(executeAt, now);
  const input: ReservationInput = { user_id: userId, point_amount: pointAmount, execute_at: executeAt as string };
  if (body.reason !== undefined && body.reason !== null) input.reason = checkField("reason", REASON, body.reason);
  return input;
}

export function checkReservationId(request: Request, pattern: string): string {
  const id = pathParam(request, pattern, "reservation_id");
  if (!UUID.test(id)) throw badRequest("reservation_id must be a UUID");
  return id.toLowerCase();
}

export type PageRequest = { limit: number; cursor: { createdAt: Date; transactionId: string } | undefined };

/** `?limit=` and `?cursor=` of the ledger, paged like the entitlement list; the cursor key is (created_at, id). */
export function checkPage(query: { limit?: string; cursor?: string }): PageRequest {
  const limit = parseLimit(query.limit);
  const key = decodeCursor(query.cursor, 2);
  if (!key) return { limit, cursor: undefined };
  const [at = "", transactionId = ""] = key;
  const createdAt = parseInstant(at);
  if (!createdAt || !UUID.test(transactionId)) {
    throw badRequest("cursor is invalid");
  }
  return { limit, cursor: { createdAt, transactionId } };
}
