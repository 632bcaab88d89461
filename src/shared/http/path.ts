// The request target as the client sent it. `request.url` is relative ("/healthz") when the request carried no usable
// Host header (HTTP/1.0 probes send none), so `new URL(request.url)` would throw; and Elysia decodes path parameters
// leniently (a malformed `%ZZ` becomes U+FFFD or nothing). Path parameters are therefore decoded here, strictly.
import { badRequest } from "./errors.ts";

/** C0 controls and DEL: never valid in an id (docs/api.md), and CR/LF could never travel in a NATS header. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is this expression's purpose
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/g;

export function hasControlCharacter(text: string): boolean {
  return text.search(CONTROL_CHARACTERS) >= 0;
}

/** The path of the request target, without query or fragment, whatever the Host header was. */
export function requestPath(request: Request): string {
  const url = request.url;
  let start = 0;
  if (!url.startsWith("/")) {
    const authority = url.indexOf("//");
    const slash = url.indexOf("/", authority < 0 ? 0 : authority + 2);
    if (slash < 0) return "/";
    start = slash;
  }
  const end = url.slice(start).search(/[?#]/);
  return end < 0 ? url.slice(start) : url.slice(start, start + end);
}

/** The query string's parameters of the request target (empty when there is none). */
export function requestQuery(request: Request): URLSearchParams {
  const at = request.url.indexOf("?");
  if (at < 0) return new URLSearchParams();
  const hash = request.url.indexOf("#", at);
  return new URLSearchParams(request.url.slice(at + 1, hash < 0 ? undefined : hash));
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
