// One request to an http endpoint (endpoints/post.ts): it goes to the checked address with the URL's host, reads at
// most RESPONSE_READ_LIMIT bytes of the answer, does not follow a redirect, and ends within its timeout.
import { afterAll, expect, test } from "bun:test";
import {
  type PostRequest,
  postToEndpoint,
  RESPONSE_READ_LIMIT,
} from "../../src/notification/outbound/endpoints/post.ts";

const seen: { host: string | null; path: string; body: string }[] = [];
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  idleTimeout: 0,
  fetch: async (request) => {
    const url = new URL(request.url);
    seen.push({ host: request.headers.get("host"), path: url.pathname + url.search, body: await request.text() });
    if (url.pathname === "/big") return new Response("x".repeat(RESPONSE_READ_LIMIT * 4));
    if (url.pathname === "/stream") {
      const chunk = new TextEncoder().encode("y".repeat(4096));
      let sent = 0;
      return new Response(
        new ReadableStream({
          pull: (c) => (sent++ < 64 ? c.enqueue(chunk) : c.close()),
        }),
      );
    }
    if (url.pathname === "/redirect") return new Response(null, { status: 307, headers: { location: "/elsewhere" } });
    if (url.pathname === "/hang") return new Promise<Response>(() => {});
    return new Response("fine", { status: 202 });
  },
});
afterAll(() => server.stop(true));

const request = (path: string, overrides: Partial<PostRequest> = {}): PostRequest => ({
  url: new URL(`http://receiver.example:${server.port}${path}`),
  addresses: [{ address: "127.0.0.1", family: 4 }],
  headers: { "content-type": "application/json" },
  body: '{"a":1}',
  timeoutMs: 2_000,
  ...overrides,
});

test("the request goes to the checked address, with the URL's host, path and body", async () => {
  expect(await postToEndpoint(request("/hook?x=1"))).toEqual({ statusCode: 202, body: "fine" });
  expect(seen.at(-1)).toEqual({ host: `receiver.example:${server.port}`, path: "/hook?x=1", body: '{"a":1}' });
});

test("at most RESPONSE_READ_LIMIT bytes of an answer are read, with or without a declared length", async () => {
  const big = await postToEndpoint(request("/big"));
  expect(big.body).toHaveLength(RESPONSE_READ_LIMIT);
  const streamed = await postToEndpoint(request("/stream"));
  expect(streamed.statusCode).toBe(200);
  expect(streamed.body).toHaveLength(RESPONSE_READ_LIMIT);
});

test("a redirect is an answer, not followed", async () => {
  const before = seen.length;
  expect((await postToEndpoint(request("/redirect"))).statusCode).toBe(307);
  expect(seen.length).toBe(before + 1);
});

test("a request that gets no answer fails after its timeout; a refused connection names the address", async () => {
  const started = performance.now();
  await expect(postToEndpoint(request("/hang", { timeoutMs: 200 }))).rejects.toThrow("timed out after 200ms");
  expect(performance.now() - started).toBeLessThan(2_000);
  const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = closed.port;
  closed.stop(true);
  const refused = request("/", { url: new URL(`http://receiver.example:${port}/`) });
  await expect(postToEndpoint(refused)).rejects.toThrow(`127.0.0.1:${port}`);
});
