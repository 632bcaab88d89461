// A console form's body: application/x-www-form-urlencoded, at most 16 KiB (the largest form holds a few ids and a
// reason), decoded strictly as UTF-8, and so is a page's query. Anything else is undefined, which the console answers
// with 400: URLSearchParams would turn `u-%ff` into `u-\uFFFD`, an id nobody typed.
import { readBodyAtMost } from "../http/body.ts";

const MAX_FORM_BYTES = 16 * 1024;

/** One name or value: `+` is a space, every escape must be a whole UTF-8 sequence (decodeURIComponent throws else). */
const decodeComponent = (text: string) => decodeURIComponent(text.replaceAll("+", " "));

/** `a=1&b=x+y` as URLSearchParams, or undefined when an escape is malformed or not UTF-8 (a lone surrogate included). */
export function decodeForm(text: string): URLSearchParams | undefined {
  const form = new URLSearchParams();
  for (const part of text.split("&")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    try {
      form.append(
        decodeComponent(eq < 0 ? part : part.slice(0, eq)),
        eq < 0 ? "" : decodeComponent(part.slice(eq + 1)),
      );
    } catch {
      return undefined;
    }
  }
  return form;
}

/** The request's query, decoded as strictly as a form; read from the target itself, which needs no Host to parse. */
export function readQuery(request: Request): URLSearchParams | undefined {
  const url = request.url;
  const start = url.indexOf("?");
  if (start < 0) return new URLSearchParams();
  const end = url.indexOf("#", start);
  return decodeForm(url.slice(start + 1, end < 0 ? undefined : end));
}

export async function readForm(request: Request): Promise<URLSearchParams | undefined> {
  const type = request.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") return undefined;
  if (!request.body) return undefined;
  const bytes = await readBodyAtMost(request, MAX_FORM_BYTES);
  if (bytes === undefined) return undefined;
  try {
    return decodeForm(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return undefined;
  }
}

/** A field's value exactly as sent (ids may start or end with a space); undefined when absent or empty. */
export function field(form: URLSearchParams, name: string): string | undefined {
  const value = form.get(name);
  return value === null || value === "" ? undefined : value;
}
