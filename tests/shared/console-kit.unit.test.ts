// The console skeleton on its own (no database): sessions, cookies, CSRF, idle timeout, sign-out, rate limit, the
// security headers and the escaping of every value. Each service's console test shows the same through its pages.
import { describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { cookie, isSecureRequest, sameSecret } from "../../src/shared/console/cookies.ts";
import { escapeHtml, html, text } from "../../src/shared/console/html.ts";
import { type ConsoleOptions, consoleRoutes } from "../../src/shared/console/kit.ts";
import { createSessionStore } from "../../src/shared/console/session.ts";
import { createLogger } from "../../src/shared/logger.ts";
import { consoleClient, hiddenField, signIn } from "../support/console-client.ts";

const TOKEN = "the-secret-console-token-0123456789";

function kit(overrides: Partial<ConsoleOptions<{ name: string }>> = {}) {
  const clock = { now: 1_000_000 };
  const lines: string[] = [];
  const actions: string[] = [];
  const app = new Elysia().use(
    consoleRoutes<{ name: string }>(
      {
        service: "demo",
        title: "Demo",
        home: "/console/home",
        nav: [{ href: "/console/home", label: "Home" }],
        idleMs: 60_000,
        alwaysSecure: false,
        now: () => clock.now,
        signIn: (token) => (token === TOKEN ? { name: "alice" } : undefined),
        nameOf: (p) => p.name,
        limit: () => undefined,
        log: createLogger({ level: "debug", service: "t", destination: { write: (l: string) => lines.push(l) } }),
        ...overrides,
      },
      {
        pages: {
          "/console/home": async ({ url, formFields }) => ({
            title: "Home",
            body: html`<p data-testid="echo">${text(url.searchParams.get("q"))}</p>
<form method="post" action="/console/act">${formFields()}<button>go</button></form>`,
          }),
        },
        actions: {
          "/console/act": async ({ formToken }) => {
            actions.push(formToken);
            return { redirect: "/console/home", notice: { ok: true, text: "done <b>" } };
          },
        },
      },
    ),
  );
  const client = consoleClient((r) => app.handle(r));
  return { app, client, clock, lines, actions };
}

describe("console skeleton", () => {
  test("without a session every page and action leads to the sign-in page", async () => {
    const { client } = kit();
    const page = await client.get("/console/home");
    expect(page.status).toBe(303);
    expect(page.location).toBe("/console/sign-in");
    expect((await client.post("/console/act", { csrf: "x", form_token: "y".repeat(24) })).location).toBe(
      "/console/sign-in",
    );
    const signInPage = await client.get("/console/sign-in");
    expect(signInPage.text).toContain('name="token"');
  });

  test("sign-in sets an HttpOnly, SameSite=Strict session cookie; a wrong token or CSRF gets none", async () => {
    const { client, lines } = kit();
    await client.get("/console/sign-in");
    const forged = await client.post("/console/sign-in", { csrf: "forged", token: TOKEN });
    expect(forged.status).toBe(403);
    // The refusal is a fresh sign-in form with a fresh CSRF cookie.
    const csrf = hiddenField(forged.text, "csrf");
    const wrong = await client.post("/console/sign-in", { csrf, token: "nope" });
    expect(wrong.status).toBe(401);
    expect(client.jar.has("demo_console_session"), "a refused sign-in opens no session").toBe(false);
    const ok = await signIn(client, TOKEN);
    expect(ok.status).toBe(303);
    const set = ok.headers.getSetCookie().find((c) => c.startsWith("demo_console_session="));
    expect(set).toContain("HttpOnly");
    expect(set).toContain("SameSite=Strict");
    expect(set).toContain("Path=/console");
    expect(set, "plain http without a proxy's word: not Secure").not.toContain("Secure");
    expect((await client.get("/console/home")).status).toBe(200);
    expect(lines.join("\n"), "the token never reaches the log").not.toContain(TOKEN);
    expect(lines.join("\n")).toContain("console sign-in");
  });

  test("behind a TLS proxy (X-Forwarded-Proto: https) the session cookie is Secure", async () => {
    const { app } = kit();
    const page = await app.handle(new Request("http://localhost/console/sign-in"));
    const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? "";
    const reply = await app.handle(
      new Request("http://localhost/console/sign-in", {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "x-forwarded-proto": "https",
          cookie: `demo_console_signin=${csrf}`,
        },
        body: new URLSearchParams({ csrf, token: TOKEN }).toString(),
      }),
    );
    expect(reply.status).toBe(303);
    const set = reply.headers.getSetCookie().find((c) => c.startsWith("demo_console_session="));
    expect(set).toEndWith("; Secure");
  });

  test("every page carries a CSP without unsafe-inline, and no script", async () => {
    const { client } = kit();
    await signIn(client, TOKEN);
    const page = await client.get("/console/home");
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(page.headers.get("cache-control")).toBe("no-store");
    expect(page.text).not.toContain("<script");
    expect(page.text).not.toContain("style=");
  });

  test("an action needs the session's CSRF token: missing or forged is 403 and runs nothing", async () => {
    const { client, actions } = kit();
    await signIn(client, TOKEN);
    const page = await client.get("/console/home");
    const formToken = hiddenField(page.text, "form_token");
    expect((await client.post("/console/act", { form_token: formToken })).status).toBe(403);
    expect((await client.post("/console/act", { csrf: "forged", form_token: formToken })).status).toBe(403);
    expect(actions).toEqual([]);
    const ok = await client.post("/console/act", { csrf: hiddenField(page.text, "csrf"), form_token: formToken });
    expect(ok.status).toBe(303);
    expect(actions).toEqual([formToken]);
    const after = await client.get("/console/home");
    expect(after.text, "the notice is shown once, escaped").toContain("done &lt;b&gt;");
    expect((await client.get("/console/home")).text).not.toContain("done &lt;b&gt;");
  });

  test("a session ends after the idle timeout and at sign-out", async () => {
    const { client, clock } = kit();
    await signIn(client, TOKEN);
    clock.now += 59_000;
    expect((await client.get("/console/home")).status, "activity keeps it alive").toBe(200);
    clock.now += 59_000;
    expect((await client.get("/console/home")).status).toBe(200);
    clock.now += 60_000;
    expect((await client.get("/console/home")).location, "idle for the timeout: signed out").toBe("/console/sign-in");

    await signIn(client, TOKEN);
    const page = await client.get("/console/home");
    const stolen = client.jar.get("demo_console_session");
    expect((await client.post("/console/sign-out", { csrf: "forged" })).status, "sign-out needs the CSRF token").toBe(
      403,
    );
    const out = await client.post("/console/sign-out", { csrf: hiddenField(page.text, "csrf") });
    expect(out.location).toBe("/console/sign-in");
    client.jar.set("demo_console_session", stolen ?? "");
    expect((await client.get("/console/home")).status, "the old cookie opens nothing").toBe(303);
  });

  test("a caller over its rate gets 429", async () => {
    let calls = 0;
    const { client } = kit({ limit: (key) => (key === "alice" && ++calls > 2 ? 7 : undefined) });
    await signIn(client, TOKEN);
    await client.get("/console/home");
    await client.get("/console/home");
    const limited = await client.get("/console/home");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("7");
  });

  test("values are escaped: a script in an id is text, a bidi override is isolated", async () => {
    const { client } = kit();
    await signIn(client, TOKEN);
    const page = await client.get(`/console/home?q=${encodeURIComponent('<script>alert(1)</script>"\u202Egnp.exe')}`);
    expect(page.text).not.toContain("<script>alert(1)");
    expect(page.text).toContain("<bdi>&lt;script&gt;alert(1)&lt;/script&gt;&quot;\u202Egnp.exe</bdi>");
  });
});

describe("console pieces", () => {
  test("escapeHtml escapes the five characters", () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&</a>`)).toBe(
      "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;",
    );
    expect(html`<p title="${'"><x'}">${["<", html`<b>`]}</p>`.markup).toBe('<p title="&quot;&gt;&lt;x">&lt;<b></p>');
  });

  test("cookies are Secure behind TLS: an https request, X-Forwarded-Proto: https, or the configuration", () => {
    const at = (url: string, headers: Record<string, string> = {}) => new Request(url, { headers });
    expect(isSecureRequest(at("http://x/"), false)).toBe(false);
    expect(isSecureRequest(at("https://x/"), false)).toBe(true);
    expect(isSecureRequest(at("http://x/", { "x-forwarded-proto": "https" }), false)).toBe(true);
    expect(isSecureRequest(at("http://x/", { "x-forwarded-proto": "http" }), true)).toBe(true);
    expect(cookie("c", "v", true)).toBe("c=v; Path=/console; HttpOnly; SameSite=Strict; Secure");
    expect(cookie("c", undefined, false)).toBe("c=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0");
  });

  test("secrets compare whole: a prefix, a missing value or another length never matches", () => {
    expect(sameSecret("abc", "abc")).toBe(true);
    expect(sameSecret("ab", "abc")).toBe(false);
    expect(sameSecret(undefined, "abc")).toBe(false);
    expect(sameSecret("ä", "ab")).toBe(false);
  });

  test("the store keeps at most maxSessions, ending the one idle longest", () => {
    const clock = { now: 0 };
    const store = createSessionStore<string>({ idleMs: 1_000, now: () => clock.now, maxSessions: 2 });
    const a = store.create("a");
    clock.now = 1;
    const b = store.create("b");
    clock.now = 2;
    store.touch(a.id);
    store.create("c");
    expect(store.size()).toBe(2);
    expect(store.touch(b.id), "b was idle the longest").toBeUndefined();
    expect(store.touch(a.id)?.principal).toBe("a");
  });

  test("a session opened with an expiring credential ends at its expiry, however active it is", () => {
    const clock = { now: 0 };
    const store = createSessionStore<string>({ idleMs: 1_000, now: () => clock.now });
    const jwt = store.create("jwt", 1_500);
    const plain = store.create("static");
    for (const t of [500, 1_000, 1_499]) {
      clock.now = t;
      expect(store.touch(jwt.id)?.principal, `alive at ${t} ms`).toBe("jwt");
      expect(store.touch(plain.id)?.principal).toBe("static");
    }
    clock.now = 1_500;
    expect(store.touch(jwt.id), "ended at the credential's expiry").toBeUndefined();
    expect(store.touch(plain.id)?.principal, "a static token's session runs on while used").toBe("static");
  });
});
