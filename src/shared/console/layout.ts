// The page frame both consoles share: the service's name, its navigation, who is signed in with a sign-out button,
// the notice of the last action, then the page. The stylesheet is a route of its own (style.ts), so the
// Content-Security-Policy needs no inline style and the pages carry no script at all.

import { type Html, html } from "./html.ts";
import type { Notice } from "./session.ts";

export type Frame = {
  /** "Entitlement" or "Notification". */
  service: string;
  nav: readonly { href: string; label: string }[];
  /** The signed-in token's name and the session's CSRF token; absent on the sign-in page. */
  signedIn?: { name: string; csrf: string };
  notice?: Notice;
  /** Reload the page after this many seconds (a long task's progress, without script). */
  refreshSeconds?: number;
};

export function layout(frame: Frame, title: string, body: Html): Html {
  const signedIn = frame.signedIn;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
${frame.refreshSeconds ? html`<meta http-equiv="refresh" content="${frame.refreshSeconds}">` : ""}
<title>${title} · ${frame.service} console</title>
<link rel="stylesheet" href="/console/style.css">
</head>
<body>
<header>
<strong>${frame.service} console</strong>
${signedIn ? html`<nav>${frame.nav.map((n) => html`<a href="${n.href}">${n.label}</a>`)}</nav>` : ""}
${
  signedIn
    ? html`<form method="post" action="/console/sign-out" class="sign-out">
<span>signed in as <bdi data-testid="signed-in-as">${signedIn.name}</bdi></span>
<input type="hidden" name="csrf" value="${signedIn.csrf}">
<button type="submit">Sign out</button>
</form>`
    : ""
}
</header>
<main>
${frame.notice ? html`<p class="notice ${frame.notice.ok ? "ok" : "error"}" role="status" data-testid="notice">${frame.notice.text}</p>` : ""}
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`;
}
