// A console form's body: application/x-www-form-urlencoded, at most 16 KiB (the largest form holds a few ids and a
// reason), decoded strictly as UTF-8. Anything else is undefined, which the console answers with 400.
const MAX_FORM_BYTES = 16 * 1024;

export async function readForm(request: Request): Promise<URLSearchParams | undefined> {
  const type = request.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") return undefined;
  if (Number(request.headers.get("content-length") ?? 0) > MAX_FORM_BYTES || !request.body) return undefined;
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > MAX_FORM_BYTES) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  try {
    return new URLSearchParams(new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks)));
  } catch {
    return undefined;
  }
}

/** A field's value exactly as sent (ids may start or end with a space); undefined when absent or empty. */
export function field(form: URLSearchParams, name: string): string | undefined {
  const value = form.get(name);
  return value === null || value === "" ? undefined : value;
}
