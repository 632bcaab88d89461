// Input checks at the edge, in the order docs/api.md gives them: Idempotency-Key first, then the media type, the
// size, the JSON and the fields. Every failure is an ApiError carrying its status, so bad input is never a 500.
import type { TString } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { badRequest } from "../../../shared/http/errors.ts";
import { readJsonObject as readJsonBody } from "../../../shared/http/json-body.ts";
import { pathParam } from "../../../shared/http/path.ts";
import { isBlank } from "../../../shared/ids.ts";
import { addCalendarYears, parseInstant } from "../../../shared/instant.ts";
import { CommandBody, MAX_BODY_BYTES, MAX_EXPIRY_AHEAD_YEARS, StockKeepingUnit, UserId } from "./model.ts";

/** The `{user_id}` path segment of the list route, decoded strictly from the request target (shared/http/path.ts). */
export function checkUserId(request: Request, pattern: string): string {
  return checkField("user_id", UserId, pathParam(request, pattern, "user_id"));
}

/** The `{stock_keeping_unit}` path segment of the item routes, decoded strictly as `checkUserId` decodes. */
export function checkSku(request: Request, pattern: string): string {
  return checkField("stock_keeping_unit", StockKeepingUnit, pathParam(request, pattern, "stock_keeping_unit"));
}

/**
 * A route's `transform`: the `{user_id}` segment of `pattern`, and its `{stock_keeping_unit}` when it has one, decoded
 * strictly into the params before they are validated.
 */
export function checkUserPath(pattern: string) {
  const withSku = pattern.includes(":stock_keeping_unit");
  return ({ params, request }: { params: Record<string, string>; request: Request }) => {
    params.user_id = checkUserId(request, pattern);
    if (withSku) params.stock_keeping_unit = checkSku(request, pattern);
  };
}

/** Reads and validates a grant/revoke body (a grant's with its optional expiry). Call after `checkIdempotencyKey`. */
export async function readCommandBody(request: Request, grant?: { now: Date }): Promise<CommandBody> {
  const json = await readJsonObject(request);
  const body = checkFields(json);
  if (!grant || json.expires_at === undefined || json.expires_at === null) return body;
  return { ...body, expires_at: checkExpiresAt(json.expires_at, grant.now) };
}

/**
 * `expires_at`: a real instant (shared/instant.ts: a date that exists, an offset, a year PostgreSQL stores) at most 10
 * calendar years ahead, returned as UTC ISO-8601 (hashed and stored so). A local time would be read in the server's
 * zone, so the offset is required. That it lies in
 * the future is checked in the transaction, after the idempotency lookup (`assertNotPast`): the retry of a request
 * that committed gets its stored reply even once its expiry has passed.
 */
export function checkExpiresAt(value: unknown, now: Date): string {
  if (typeof value !== "string") throw badRequest("expires_at must be a string");
  const at = parseInstant(value);
  if (!at) {
    throw badRequest("expires_at must be an ISO-8601 date-time with an offset, e.g. 2027-01-08T00:00:00+09:00");
  }
  if (at > addCalendarYears(now, MAX_EXPIRY_AHEAD_YEARS)) {
    throw badRequest(`expires_at must be at most ${MAX_EXPIRY_AHEAD_YEARS} years ahead`);
  }
  return at.toISOString();
}

/** A new request's expiry must lie ahead (a 400 thrown inside the transaction rolls back what it did). */
export function assertNotPast(expiresAt: string | undefined, now: Date): void {
  if (expiresAt !== undefined && new Date(expiresAt).getTime() <= now.getTime()) {
    throw badRequest("expires_at must be in the future");
  }
}

/** The body as a JSON object: media type, size and JSON checked, in that order. */
export function readJsonObject(request: Request): Promise<Record<string, unknown>> {
  return readJsonBody(request, MAX_BODY_BYTES);
}

/** Checks the fields in schema order and reports the first bad one; unknown fields are dropped. */
export function checkFields(body: Record<string, unknown>): CommandBody {
  const out: Record<string, string> = {};
  for (const [name, schema] of Object.entries(CommandBody.properties) as [string, TString][]) {
    out[name] = checkField(name, schema, body[name]);
  }
  return out as CommandBody;
}

/** One string field against its schema: required, well-formed, within its length, free of what PostgreSQL refuses. */
export function checkField(name: string, schema: TString, value: unknown): string {
  if (value === undefined || value === null) throw badRequest(`${name} is required`);
  if (typeof value !== "string") throw badRequest(`${name} must be a string`);
  // JSON can carry a lone surrogate ("\ud800"); PostgreSQL's json types refuse it, so it would fail the command's
  // transaction with a 500 (found by tests/entitlement/properties.int.test.ts).
  if (!value.isWellFormed()) throw badRequest(`${name} must be well-formed Unicode (no lone surrogate)`);
  if (Value.Check(schema, value as unknown)) return value;
  if (isBlank(value)) throw badRequest(`${name} is required`);
  if (value.length > (schema.maxLength ?? Number.POSITIVE_INFINITY)) {
    throw badRequest(`${name} must be at most ${schema.maxLength} characters`);
  }
  throw badRequest(`${name} must not contain control characters`);
}
