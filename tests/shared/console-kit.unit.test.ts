// The console skeleton on its own (no database): sessions, cookies, CSRF, idle timeout, sign-out, rate limit, the
// security headers and the escaping of every value. Each service's console test shows the same through its pages.
import { describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { cookie, isSecureRequest, sameSecret } from "../../src/shared/console/cookies.ts";
import { decodeForm } from "../../src/shared/console/form.ts";
import { escapeHtml, html, sentence, text } from "../../src/shared/console/html.ts";
import { ConsoleForbidden, type ConsoleOptions, consoleRoutes } from "../../src/shared/console/kit.ts";
import { createSessionStore } from "../../src/shared/console/session.ts";
import { ApiError } from "../../src/shared/http/errors.ts";
import { createLogger } from "../../src/shared/logger.ts";
import { consoleClient, hiddenField, signIn } from "../support/console-client.ts";

const TOKEN = "the-secret-console-token-0123456789";

function kit(overrides: Partial<ConsoleOptions<{ name: string }>> = {}) {
  const clock = { now: 1_000_000 };
  /** What /console/broken throws. */
  const broken: { error: unknown } = { error: new Error("boom") };
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
        tokenLabel: "Demo token",
        signIn: (token) => (token === TOKEN ? { name: "alice" } : undefined),
        nameOf: (p) => p.name,
        limit: () => undefined,
        log: createLogger({ level: "debug", service: "t", destination: { write: (l: string) => lines.push(l) } }),
        ...overrides,
      },
      {
        pages: {
          "/console/home": async ({ query, formFields }) => ({
            title: "Home",
            body: html`<p data-testid="echo">${text(query.get("q"))}</p>
<form method="post" action="/console/act">${formFields()}<button>go</button></form>`,
          }),
          "/console/broken": async () => {
            throw broken.error;
          },
        },
        actions: {
          "/console/act": async ({ formToken }) => {
            actions.push(formToken);
            return { redirect: "/console/home", notice: { ok: true, text: sentence`done ${"<b>\u202E"}` } };
          },
        },
      },
    ),
  );
  const client = consoleClient((r) => app.handle(r));
  return { app, client, clock, lines, actions, broken };
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
    expect(after.text, "the notice is shown once, escaped and isolated").toContain("done <bdi>&lt;b&gt;\u202E</bdi>");
    expect((await client.get("/console/home")).text).not.toContain("done <bdi>");
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

describe("console sign-in", () => {
  test("a right token always gets in, however many wrong ones came before; refusals over the allowance are 429 with Retry-After", async () => {
    const { client, lines } = kit();
    const statuses: number[] = [];
    const waits: (string | null)[] = [];
    for (let i = 0; i < 30; i++) {
      const reply = await signIn(client, `wrong-${i}`);
      statuses.push(reply.status);
      if (reply.status === 429) waits.push(reply.headers.get("retry-after"));
    }
    expect(statuses.slice(0, 10), "the first refusals are 401").toEqual(Array(10).fill(401));
    expect(statuses.slice(10), "then the client is told to slow down").toEqual(Array(20).fill(429));
    expect(
      waits.every((w) => Number(w) >= 1),
      "every 429 says when to come back",
    ).toBe(true);
    expect((await signIn(client, TOKEN)).status, "the right token is never limited").toBe(303);
    expect((await client.get("/console/home")).status).toBe(200);
    const refusals = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "console sign-in refused");
    expect(refusals, "thirty refusals, one line per quiet spell").toHaveLength(1);
    const refusedLine = lines.find((l) => l.includes("console sign-in refused")) ?? "";
    expect(refusedLine.split('"service"').length - 1, "the logger names the service; the line adds no second one").toBe(
      1,
    );
  });

  test("a valid token the console refuses (ConsoleForbidden) is a 403 saying why, and opens no session", async () => {
    const { client } = kit({
      signIn: (token) => {
        if (token === TOKEN) throw new ConsoleForbidden(sentence`The token ${"w\u202Eriter"} cannot read.`);
        return undefined;
      },
    });
    const reply = await signIn(client, TOKEN);
    expect(reply.status).toBe(403);
    expect(reply.text).toContain("The token <bdi>w\u202Eriter</bdi> cannot read.");
    expect(client.jar.has("demo_console_session")).toBe(false);
  });

  test("the form names the token it takes", async () => {
    const { client } = kit();
    expect((await client.get("/console/sign-in")).text).toContain("<label>Demo token <input");
  });

  test("signing in again ends the browser's previous session", async () => {
    const { client } = kit();
    await signIn(client, TOKEN);
    const first = client.jar.get("demo_console_session") ?? "";
    await signIn(client, TOKEN);
    const second = client.jar.get("demo_console_session") ?? "";
    expect(second).not.toBe(first);
    expect((await client.get("/console/home")).status).toBe(200);
    client.jar.set("demo_console_session", first);
    expect((await client.get("/console/home")).location, "the replaced session opens nothing").toBe("/console/sign-in");
  });
});

describe("console sessions and failures", () => {
  test("a session whose credential no longer holds ends at its next request, for good", async () => {
    const valid = { now: true };
    const { client, lines } = kit({ recheck: () => valid.now });
    await signIn(client, TOKEN);
    expect((await client.get("/console/home")).status).toBe(200);
    valid.now = false;
    expect((await client.get("/console/home")).location).toBe("/console/sign-in");
    valid.now = true;
    expect((await client.get("/console/home")).location, "the ended session stays ended").toBe("/console/sign-in");
    const ended = lines.map((l) => JSON.parse(l)).filter((l) => l.msg?.startsWith("console session ended"));
    expect(ended.map((l) => l.token_name)).toEqual(["alice"]);
  });

  test("a database that cannot be reached is 503 with Retry-After, logged once per quiet spell; an ApiError 503 too", async () => {
    const { client, broken, lines } = kit();
    await signIn(client, TOKEN);
    broken.error = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    for (let i = 0; i < 3; i++) {
      const page = await client.get("/console/broken");
      expect([page.status, page.headers.get("retry-after")]).toEqual([503, "1"]);
      expect(page.text).not.toContain("ECONNREFUSED");
    }
    const warned = lines
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === "console request found the database unavailable");
    expect(warned.map((l) => [l.code, l.err])).toEqual([["ECONNREFUSED", undefined]]);
    broken.error = new ApiError(503, "NOT_READY", "database unavailable, retry later");
    const gated = await client.get("/console/broken");
    expect([gated.status, gated.headers.get("retry-after")]).toEqual([503, "1"]);
  });

  test("a malformed percent escape in a page's query or an action's form is 400, never U+FFFD", async () => {
    const { app, client, actions } = kit();
    await signIn(client, TOKEN);
    const page = await client.get("/console/home?q=u-%ff");
    expect(page.status).toBe(400);
    expect(page.text).not.toContain("\uFFFD");
    expect((await client.get("/console/home?q=u-%C3%A9+x")).text).toContain("<bdi>u-\u00e9 x</bdi>");
    const home = await client.get("/console/home");
    const reply = await client.post("/console/act", {
      csrf: hiddenField(home.text, "csrf"),
      form_token: hiddenField(home.text, "form_token"),
    });
    expect(reply.status).toBe(303);
    const raw = await client.get("/console/home");
    const bad = await app.handle(
      new Request("http://localhost/console/act", {
        method: "POST",
        headers: {
          cookie: `demo_console_session=${client.jar.get("demo_console_session")}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: `csrf=${hiddenField(raw.text, "csrf")}&form_token=${hiddenField(raw.text, "form_token")}&id=u-%ff`,
      }),
    );
    expect(bad.status).toBe(400);
    expect(actions, "the malformed form ran nothing").toHaveLength(1);
  });
});

describe("console pieces", () => {
  test("forms decode strictly: + is a space, an escape must be whole UTF-8", () => {
    expect([...(decodeForm("a=x+y%20z&b=&c&=d") ?? [])]).toEqual([
      ["a", "x y z"],
      ["b", ""],
      ["c", ""],
      ["", "d"],
    ]);
    for (const bad of ["a=%ff", "a=%e3%80", "a=%ED%A0%80", "a=%zz", "a=%", "%ff=1"]) {
      expect(decodeForm(bad), bad).toBeUndefined();
    }
    expect(decodeForm("a=%E3%80%80")?.get("a")).toBe("\u3000");
  });

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
