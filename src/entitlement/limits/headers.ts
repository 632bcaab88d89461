// Header limits at the edge. Bun itself refuses heads beyond 16 KiB (bare 431) and bodies beyond the server's
// maxRequestBodySize (bare 413); these tighter limits answer in the `{code, message}` envelope.
import { ApiError } from "../../shared/http/errors.ts";

/** Sum of header names and values; no legitimate caller of this API comes close. */
export const MAX_HEADER_BYTES = 8 * 1024;
export const MAX_HEADER_COUNT = 64;
/** Handed to Bun.serve: above the 16 KiB the validation enforces, so nearly every refusal is an envelope 413. */
export const MAX_REQUEST_BODY_BYTES = 64 * 1024;

export function checkHeaderLimits(headers: Headers): void {
  let bytes = 0;
  let count = 0;
  headers.forEach((value, name) => {
    bytes += name.length + value.length;
    count += 1;
  });
  if (bytes > MAX_HEADER_BYTES || count > MAX_HEADER_COUNT) {
    throw new ApiError(431, "BAD_REQUEST", "request headers are too large");
  }
}
