// The send API's body, checked field by field in the documented order (docs/api.md "Sending notifications"), each
// refusal a 400 naming the field and the rule, before anything runs. The Idempotency-Key is checked before this.
import { badRequest } from "../../../shared/http/errors.ts";
import { readJsonObject } from "../../../shared/http/json-body.ts";
import { isPlainText } from "../../../shared/ids.ts";
import { parseInstant } from "../../../shared/instant.ts";
import {
  MAX_BODY_LENGTH,
  MAX_COLLAPSE_KEY_LENGTH,
  MAX_DATA_BYTES,
  MAX_EXPIRY_AHEAD_MS,
  MAX_RECIPIENTS,
  MAX_SEND_BODY_BYTES,
  MAX_TITLE_LENGTH,
  MAX_USER_ID_LENGTH,
  type SendRequest,
} from "./model.ts";
import { sendTypeProblem } from "./types.ts";

const refuse = (problem: string | undefined) => {
  if (problem !== undefined) throw badRequest(problem);
};

/** Reads and checks a send; `now` bounds expires_at (at most 30 days ahead; whether it is past is the service's). */
export async function readSendBody(request: Request, now: Date): Promise<SendRequest> {
  const json = await readJsonObject(request, MAX_SEND_BODY_BYTES);
  if (json.type === undefined || json.type === null) throw badRequest("type is required");
  refuse(sendTypeProblem("type", json.type));
  return {
    type: json.type as string,
    user_ids: checkUserIds(json.user_ids),
    data: checkData(json.data),
    title: checkText("title", json.title, MAX_TITLE_LENGTH),
    body: checkText("body", json.body, MAX_BODY_LENGTH),
    collapse_key: checkCollapseKey(json.collapse_key),
    expires_at: checkExpiresAt(json.expires_at, now),
  };
}

function checkUserIds(value: unknown): string[] {
  if (value === undefined || value === null) throw badRequest("user_ids is required");
  if (!Array.isArray(value)) throw badRequest("user_ids must be an array of user ids");
  if (value.length < 1 || value.length > MAX_RECIPIENTS) {
    throw badRequest(`user_ids must hold 1 to ${MAX_RECIPIENTS} user ids`);
  }
  const index = value.findIndex((id) => typeof id !== "string" || !isPlainText(id, 1, MAX_USER_ID_LENGTH));
  if (index !== -1) {
    throw badRequest(
      `user_ids[${index}] must be a string of 1 to ${MAX_USER_ID_LENGTH} characters, not blank, without control characters`,
    );
  }
  return [...new Set(value as string[])];
}

function checkData(value: unknown): Record<string, unknown> | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) throw badRequest("data must be a JSON object");
  const text = JSON.stringify(value);
  if (Buffer.byteLength(text) > MAX_DATA_BYTES)
    throw badRequest(`data must be at most ${MAX_DATA_BYTES} bytes serialised`);
  if (!storableJson(value)) throw badRequest(`data ${UNSTORABLE} in its keys and strings`);
  return value as Record<string, unknown>;
}

/** PostgreSQL's text and json types refuse U+0000 and a lone surrogate: either would fail the transaction (a 500). */
function storable(text: string): boolean {
  return text.isWellFormed() && !text.includes("\u0000");
}

/** Every key and string of a JSON value, storable. */
function storableJson(value: unknown): boolean {
  if (typeof value === "string") return storable(value);
  if (typeof value !== "object" || value === null) return true;
  if (Array.isArray(value)) return value.every(storableJson);
  return Object.entries(value).every(([key, inner]) => storable(key) && storableJson(inner));
}

const UNSTORABLE = "must be well-formed Unicode without U+0000";

function checkText(field: string, value: unknown, max: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw badRequest(`${field} must be a string`);
  if (value.length > max) throw badRequest(`${field} must be at most ${max} characters`);
  if (!storable(value)) throw badRequest(`${field} ${UNSTORABLE}`);
  return value;
}

function checkCollapseKey(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string" || !isPlainText(value, 1, MAX_COLLAPSE_KEY_LENGTH)) {
    throw badRequest(
      `collapse_key must be a string of 1 to ${MAX_COLLAPSE_KEY_LENGTH} characters, not blank, without control characters`,
    );
  }
  return value;
}

function checkExpiresAt(value: unknown, now: Date): string | null {
  if (value === undefined || value === null) return null;
  const at = typeof value === "string" ? parseInstant(value) : undefined;
  if (!at) throw badRequest("expires_at must be an ISO-8601 date-time with an offset, e.g. 2027-01-08T00:00:00+09:00");
  if (at.getTime() > now.getTime() + MAX_EXPIRY_AHEAD_MS) throw badRequest("expires_at must be at most 30 days ahead");
  return at.toISOString();
}
