// A console form's body: application/x-www-form-urlencoded, at most 16 KiB (the largest form holds a few ids and a
// reason), decoded strictly as UTF-8. Anything else is undefined, which the console answers with 400.
import { readBodyAtMost } from "../http/body.ts";

const MAX_FORM_BYTES = 16 * 1024;

export async function readForm(request: Request): Promise<URLSearchParams | undefined> {
  const type = request.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") return undefined;
  if (!request.body) return undefined;
  const bytes = await readBodyAtMost(request, MAX_FORM_BYTES);
  if (bytes === undefined) return undefined;
  try {
    return new URLSearchParams(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return undefined;
  }
}

/** A field's value exactly as sent (ids may start or end with a space); undefined when absent or empty. */
export function field(form: URLSearchParams, name: string): string | undefined {
  const value = form.get(name);
  return value === null || value === "" ? undefined : value;
}
