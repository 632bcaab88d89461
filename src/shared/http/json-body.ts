// A request's JSON object body, read in the order docs/api.md gives: the media type, the size, the JSON. Every failure
// is an ApiError carrying its status (415, 413, 400), so bad input is never a 500. Both services' JSON commands read
// their bodies here, each with its own size limit.
import { readBodyAtMost } from "./body.ts";
import { ApiError, badRequest } from "./errors.ts";
import { findDuplicateKey } from "./json-keys.ts";

const JSON_MEDIA_TYPE = /^application\/(?:[^/;\s]+\+)?json$/;

const unsupportedMediaType = () => new ApiError(415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json");
// The rest of an oversized body is never read, so the connection is closed after the reply rather than kept alive.
const tooLarge = (limit: number) =>
  new ApiError(413, "PAYLOAD_TOO_LARGE", `request body must be at most ${limit} bytes`, { connection: "close" });

/** The body as a JSON object of at most `limit` bytes: media type, size and JSON checked, in that order. */
export async function readJsonObject(request: Request, limit: number): Promise<Record<string, unknown>> {
  const contentType = request.headers.get("content-type");
  const mediaType = contentType?.split(";")[0]?.trim().toLowerCase();
  if (mediaType !== undefined && !JSON_MEDIA_TYPE.test(mediaType)) throw unsupportedMediaType();
  const bytes = await readBodyAtMost(request, limit);
  if (bytes === undefined) throw tooLarge(limit);
  if (bytes.length === 0) throw badRequest("request body is required");
  // A non-empty body without a Content-Type is octet-stream, so not JSON: a 415.
  if (mediaType === undefined) throw unsupportedMediaType();
  const parsed = parseJson(bytes);
  if (parsed === null) throw badRequest("request body is required");
  if (typeof parsed !== "object" || Array.isArray(parsed)) throw badRequest("request body is invalid");
  return parsed as Record<string, unknown>;
}

function parseJson(bytes: Uint8Array): unknown {
  let text: string;
  let parsed: unknown;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    parsed = JSON.parse(text);
  } catch {
    throw badRequest("request body is invalid");
  }
  const repeated = findDuplicateKey(text);
  if (repeated !== undefined) throw badRequest("request body is invalid: a key appears twice in one object");
  return parsed;
}
