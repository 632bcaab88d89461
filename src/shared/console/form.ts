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

/** A multipart form (a file upload): its text fields and its files' bytes. */
export type UploadedFile = { name: string; bytes: Uint8Array };
export type Upload = { form: URLSearchParams; files: Map<string, UploadedFile> };

/**
 * A multipart/form-data body of at most `maxBytes` (files, fields and boundaries together), its text fields decoded
 * as UTF-8 (a field that is not is undefined: 400). Undefined for any other body.
 */
export async function readUpload(request: Request, maxBytes: number): Promise<Upload | undefined> {
  const contentType = request.headers.get("content-type") ?? "";
  if (contentType.split(";")[0]?.trim().toLowerCase() !== "multipart/form-data") return undefined;
  const bytes = request.body ? await readBodyAtMost(request, maxBytes) : undefined;
  if (bytes === undefined) return undefined;
  let parts: Awaited<ReturnType<Response["formData"]>>;
  try {
    parts = await new Response(bytes, { headers: { "content-type": contentType } }).formData();
  } catch {
    return undefined;
  }
  const upload: Upload = { form: new URLSearchParams(), files: new Map() };
  for (const [name, value] of parts.entries()) {
    if (typeof value === "string") upload.form.append(name, value);
    else upload.files.set(name, { name: value.name, bytes: new Uint8Array(await value.arrayBuffer()) });
  }
  return upload;
}

/** A field's value exactly as sent (ids may start or end with a space); undefined when absent or empty. */
export function field(form: URLSearchParams, name: string): string | undefined {
  const value = form.get(name);
  return value === null || value === "" ? undefined : value;
}
