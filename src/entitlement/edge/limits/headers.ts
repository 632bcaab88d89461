// Header limits at the edge. Bun itself refuses heads beyond 16 KiB (bare 431); this tighter limit answers in the
// `{code, message}` envelope. Bodies are limited while they are read (entitlements/validation.ts): Bun's own
// maxRequestBodySize stays at its default, far above, because its refusal is a bare 413 without the envelope.
import { ApiError } from "../../../shared/http/errors.ts";

/** Sum of header names and values; no legitimate caller of this API comes close. */
export const MAX_HEADER_BYTES = 8 * 1024;
export const MAX_HEADER_COUNT = 64;

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
