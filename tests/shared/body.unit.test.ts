// A body read with a byte limit (src/shared/http/body.ts): a request that declares its length is read whole, one that
// streams is read chunk by chunk, and neither way returns more than the limit, whatever the header says.
import { afterAll, describe, expect, test } from "bun:test";
import { readBodyAtMost } from "../../src/shared/http/body.ts";

const text = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : new TextDecoder().decode(bytes));

const streamOf = (...parts: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const part of parts) controller.enqueue(new TextEncoder().encode(part));
      controller.close();
    },
  });

const post = (body: string | ReadableStream<Uint8Array>, headers: Record<string, string> = {}) =>
  new Request("http://localhost/", { method: "POST", headers, body });

describe("a request", () => {
  test("that declares its length is read whole, up to the limit included", async () => {
    expect(text(await readBodyAtMost(post("0123456789", { "content-length": "10" }), 10))).toBe("0123456789");
  });

  test("that declares more than the limit is refused before a byte is read", async () => {
    const request = post(streamOf("0123456789"), { "content-length": "11" });
    expect(await readBodyAtMost(request, 10)).toBeUndefined();
    expect(request.bodyUsed, "nothing read").toBe(false);
  });

  test("that declares less than it carries is refused when the bytes pass the limit", async () => {
    expect(await readBodyAtMost(post("x".repeat(100), { "content-length": "10" }), 50)).toBeUndefined();
  });

  test("that streams without a length is read chunk by chunk and refused past the limit", async () => {
    const streamed = post(streamOf("01234", "56789"));
    expect(streamed.headers.get("content-length"), "no length declared").toBeNull();
    expect(text(await readBodyAtMost(streamed, 10))).toBe("0123456789");
    expect(await readBodyAtMost(post(streamOf("01234", "56789", "x")), 10)).toBeUndefined();
  });

  test("without a body is zero bytes", async () => {
    expect(await readBodyAtMost(new Request("http://localhost/", { method: "POST" }), 10)).toEqual(new Uint8Array());
  });
});

describe("over a real connection", () => {
  const server = Bun.serve({
    port: 0,
    async fetch(request) {
      const bytes = await readBodyAtMost(request, 16);
      return new Response(bytes === undefined ? "refused" : `read ${new TextDecoder().decode(bytes)}`);
    },
  });
  afterAll(() => server.stop(true));

  test("a declared length within the limit is read, one over it refused, a chunked body held to the limit", async () => {
    const url = `http://127.0.0.1:${server.port}/`;
    const declared = await fetch(url, { method: "POST", body: "0123456789" });
    expect(await declared.text()).toBe("read 0123456789");
    const over = await fetch(url, { method: "POST", body: "x".repeat(17) });
    expect(await over.text()).toBe("refused");
    const chunked = await fetch(url, { method: "POST", body: streamOf("x".repeat(10), "x".repeat(10)) });
    expect(await chunked.text()).toBe("refused");
  });
});

describe("a response", () => {
  test("is read chunk by chunk whatever it declares: a declared length never lets more than the limit through", async () => {
    const response = new Response(streamOf("x".repeat(60), "x".repeat(40)), { headers: { "content-length": "10" } });
    expect(await readBodyAtMost(response, 50)).toBeUndefined();
  });
});
