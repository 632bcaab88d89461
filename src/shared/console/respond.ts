// Every console response: HTML with the security headers, or a 303 redirect (post/redirect/get). The
// Content-Security-Policy allows no script and no inline style at all; the stylesheet comes from this origin.
import type { Html } from "./html.ts";

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "style-src 'self'",
  "img-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  // Pages show one user's data to one signed-in person: no cache keeps them.
  "cache-control": "no-store",
};

function headersWith(cookies: readonly string[], extra: Record<string, string>): Headers {
  const headers = new Headers({ ...SECURITY_HEADERS, ...extra });
  for (const c of cookies) headers.append("set-cookie", c);
  return headers;
}

export function htmlResponse(status: number, page: Html, cookies: readonly string[] = []): Response {
  return new Response(page.markup, {
    status,
    headers: headersWith(cookies, { "content-type": "text/html; charset=utf-8" }),
  });
}

export function redirect(location: string, cookies: readonly string[] = []): Response {
  return new Response(null, { status: 303, headers: headersWith(cookies, { location }) });
}

export function stylesheetResponse(css: string): Response {
  return new Response(css, {
    headers: { ...SECURITY_HEADERS, "content-type": "text/css; charset=utf-8", "cache-control": "max-age=300" },
  });
}

/** A file for the browser to save (a CSV result): never cached, never sniffed as anything else. */
export function downloadResponse(fileName: string, contentType: string, body: string): Response {
  const safeName = fileName.replace(/[^A-Za-z0-9._-]/g, "_");
  return new Response(body, {
    headers: headersWith([], {
      "content-type": contentType,
      "content-disposition": `attachment; filename="${safeName}"`,
    }),
  });
}
