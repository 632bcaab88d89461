// One request to an http endpoint (endpoints/post.ts): it goes to the checked address with the URL's host, reads at
// most RESPONSE_READ_LIMIT bytes of the answer, does not follow a redirect, and ends within its timeout; beyond
// FETCH_SHARE requests in flight it takes node:http, and both paths count an answer whose body is cut off or stalls
// by its status.
import { afterAll, expect, test } from "bun:test";
import {
  FETCH_SHARE,
  type PostRequest,
  postToEndpoint,
  RESPONSE_READ_LIMIT,
} from "../../src/notification/work/endpoints/post.ts";

const seen: { host: string | null; path: string; body: string; agent: string | null }[] = [];
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  idleTimeout: 0,
  fetch: async (request) => {
    const url = new URL(request.url);
    seen.push({
      host: request.headers.get("host"),
      path: url.pathname + url.search,
      body: await request.text(),
      agent: request.headers.get("user-agent"),
    });
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
  expect(seen.at(-1)).toEqual({
    host: `receiver.example:${server.port}`,
    path: "/hook?x=1",
    body: '{"a":1}',
    agent: expect.stringMatching(/^Bun\//),
  });
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

/**
 * Runs `body` while FETCH_SHARE requests to a receiver that never answers hold every fetch slot of the module, so
 * that the requests it makes take node:http; then waits for those to time out.
 */
async function withFetchFull<T>(body: () => Promise<T>): Promise<T> {
  const held = Array.from({ length: FETCH_SHARE }, () =>
    postToEndpoint(request("/hang", { timeoutMs: 1_500 })).then(
      () => "answered",
      (error: Error) => error.message,
    ),
  );
  try {
    return await body();
  } finally {
    expect(await Promise.all(held)).toEqual(Array(FETCH_SHARE).fill("timed out after 1500ms"));
  }
}

test("beyond FETCH_SHARE requests in flight an http request takes node:http, to the same address and host", async () => {
  const viaFetch = await postToEndpoint(request("/hook?path=fetch"));
  expect(viaFetch).toEqual({ statusCode: 202, body: "fine" });
  expect(seen.at(-1)?.agent, "fetch names itself").toStartWith("Bun/");
  const viaNode = await withFetchFull(() => postToEndpoint(request("/hook?path=node")));
  expect(viaNode).toEqual({ statusCode: 202, body: "fine" });
  const last = seen.findLast((r) => r.path === "/hook?path=node");
  expect(last, "node:http sends no user-agent of its own").toEqual({
    host: `receiver.example:${server.port}`,
    path: "/hook?path=node",
    body: '{"a":1}',
    agent: null,
  });
}, 10_000);

/** A receiver that answers 200 with a declared length of 1,000 bytes, sends 7 of them and then closes or stalls. */
function cutOffReceiver(then: "close" | "stall") {
  return Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data(socket) {
        socket.write("HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\npartial");
        if (then === "close") socket.end();
      },
    },
  });
}

test("an answer whose body is cut off or stalls counts by its status, through fetch and through node:http", async () => {
  for (const then of ["close", "stall"] as const) {
    const receiver = cutOffReceiver(then);
    const cut = () =>
      postToEndpoint(request("/", { url: new URL(`http://receiver.example:${receiver.port}/`), timeoutMs: 500 }));
    try {
      expect((await cut()).statusCode, `fetch, body that ${then}s`).toBe(200);
      expect((await withFetchFull(cut)).statusCode, `node:http, body that ${then}s`).toBe(200);
    } finally {
      receiver.stop(true);
    }
  }
}, 20_000);
