// A console user without a browser: a cookie jar, GETs and form POSTs through any fetch (an app's `handle` or the
// network), and the hidden fields of a page's forms. The browser test (tests/e2e/console-browser) drives the real thing.

export type ConsolePage = { status: number; location: string | null; text: string; headers: Headers };

export function consoleClient(handle: (request: Request) => Promise<Response> | Response, base = "http://localhost") {
  const jar = new Map<string, string>();
  const cookieHeader = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
  const send = async (request: Request): Promise<ConsolePage> => {
    const response = await handle(request);
    for (const line of response.headers.getSetCookie()) {
      const [pair = ""] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      if (value === "" || /max-age=0/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
    return {
      status: response.status,
      location: response.headers.get("location"),
      text: await response.text(),
      headers: response.headers,
    };
  };
  return {
    jar,
    get: (path: string) => send(new Request(`${base}${path}`, { headers: { cookie: cookieHeader() } })),
    post: (path: string, fields: Record<string, string>) =>
      send(
        new Request(`${base}${path}`, {
          method: "POST",
          headers: { cookie: cookieHeader(), "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams(fields).toString(),
        }),
      ),
  };
}

export type ConsoleClient = ReturnType<typeof consoleClient>;

/** The value of hidden input `name` in the first form of `html` whose opening tag contains `marker`. */
export function hiddenField(html: string, name: string, marker = "<form"): string {
  const start = html.indexOf(marker);
  if (start < 0) throw new Error(`no form matching ${marker}`);
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html.slice(start));
  if (!match?.[1]) throw new Error(`no hidden ${name} after ${marker}`);
  return match[1];
}

/** Signs in with `token`: the sign-in page's CSRF field, then the POST; returns the POST's reply. */
export async function signIn(client: ConsoleClient, token: string): Promise<ConsolePage> {
  const page = await client.get("/console/sign-in");
  return client.post("/console/sign-in", { csrf: hiddenField(page.text, "csrf"), token });
}
