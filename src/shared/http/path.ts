// The one reading of a request target that routing, authorisation and path parameters all share. Elysia's router takes
// the path of `request.url` from the first "/" at or after offset 11, which assumes an absolute URL with a host of at
// least four characters; a request without a usable Host header has a relative `request.url` ("/healthz", not even
// normalised), and a one-letter Host puts offset 11 inside the path. `canonicalRequest` (run before Elysia sees the
// request, shared/http/app.ts) gives every request an absolute URL on which that rule and `requestPath` agree, so the
// path that is authorised is the path that is routed. Path parameters are then decoded here, strictly: Elysia decodes
// them leniently (a malformed `%ZZ` becomes U+FFFD or nothing).
import { badRequest } from "./errors.ts";

/** C0 controls and DEL: never valid in an id (docs/api.md), and CR/LF could never travel in a NATS header. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is this expression's purpose
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/g;

export function hasControlCharacter(text: string): boolean {
  return text.search(CONTROL_CHARACTERS) >= 0;
}

/** The origin of a request whose own URL could not be routed as it was: any origin would do, this one is long enough. */
const CANONICAL_ORIGIN = "http://localhost";
/** Where Elysia's router starts looking for the path's first "/" in `request.url`. */
const ROUTER_PATH_FROM = 11;

/** The index of the path's first "/" in an absolute http(s) URL, -1 when there is none, undefined for a relative one. */
function pathStart(url: string): number | undefined {
  const authority = url.startsWith("http://") ? 7 : url.startsWith("https://") ? 8 : undefined;
  return authority === undefined ? undefined : url.indexOf("/", authority);
}

/**
 * The request with a URL that every reader of it parses alike: absolute, no fragment, and the path's first "/" where
 * Elysia's router looks for it. Most requests already are (Bun builds `request.url` from a valid Host and normalises
 * it) and are returned as they are; the others are rebuilt on a fixed origin with their path and query normalised
 * (dot segments, backslashes, non-ASCII). Undefined: the target is not a path (answered 400 before any route).
 */
export function canonicalRequest(request: Request): Request | undefined {
  const url = request.url;
  const start = pathStart(url);
  if (start !== undefined && start >= ROUTER_PATH_FROM && url.indexOf("/", ROUTER_PATH_FROM) === start) {
    if (!url.includes("#")) return request;
  }
  const target = start === undefined ? url : start < 0 ? "/" : url.slice(start);
  if (!target.startsWith("/")) return undefined;
  let canonical: URL;
  try {
    canonical = new URL(CANONICAL_ORIGIN + target);
  } catch {
    return undefined;
  }
  canonical.hash = "";
  return new Request(canonical.href, request);
}

/**
 * The path of a request's URL, without the query: read exactly as Elysia's router reads it, so on a canonical request
 * (`canonicalRequest`) it is the path of the route that will run.
 */
export function requestPath(request: Request): string {
  const url = request.url;
  const start = url.indexOf("/", ROUTER_PATH_FROM);
  if (start < 0) return "/";
  const query = url.indexOf("?", start + 1);
  return query < 0 ? url.slice(start) : url.slice(start, query);
}

/**
 * The parameter `name` of the route `pattern` (e.g. "/v1/users/:user_id/entitlements"), percent-decoded strictly:
 * a malformed escape or bytes that are not well-formed UTF-8 are 400, never a replacement character, so two different
 * requests never name the same user. Throws 400 too for a control character in the decoded value.
 */
export function pathParam(request: Request, pattern: string, name: string): string {
  const index = pattern.split("/").indexOf(`:${name}`);
  const raw = requestPath(request).split("/")[index];
  if (index < 0 || raw === undefined) throw badRequest(`${name} is required`);
  let value: string;
  try {
    value = decodeURIComponent(raw);
  } catch {
    throw badRequest(`${name} must be well-formed UTF-8 percent-encoding`);
  }
  if (hasControlCharacter(value)) throw badRequest(`${name} must not contain control characters`);
  return value;
}
