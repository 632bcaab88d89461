// An https endpoint reached through the address the SSRF guard checked: the TLS server name and the certificate check
// are the URL's host's, not the address's, so a certificate for the host verifies and the request arrives.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestCa, type TestCa } from "../support/certificates.ts";

setDefaultTimeout(60_000);

let dir: string;
let ca: TestCa;
let server: ReturnType<typeof Bun.serve>;
const hosts: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "endpoint-tls-"));
  ca = await createTestCa(dir);
  const pair = await ca.server("receiver", "DNS:receiver.example");
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: Bun.file(pair.cert), key: Bun.file(pair.key) },
    fetch: (request) => {
      hosts.push(request.headers.get("host") ?? "");
      return new Response("secure");
    },
  });
});
afterAll(() => {
  server?.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

async function post(url: string): Promise<{ status?: number; body?: string; error?: string }> {
  const child = Bun.spawn(["bun", "run", join(import.meta.dir, "endpoint-post.child.ts")], {
    env: { ...process.env, URL: url, ADDRESS: "127.0.0.1", NODE_EXTRA_CA_CERTS: ca.ca },
    stdout: "pipe",
  });
  const out = await new Response(child.stdout).text();
  await child.exited;
  return JSON.parse(out.trim().split("\n").at(-1) ?? "{}");
}

test("the certificate is checked against the URL's host while the connection goes to the checked address", async () => {
  const answer = await post(`https://receiver.example:${server.port}/hook`);
  expect(answer).toEqual({ status: 200, body: "secure" });
  expect(hosts).toEqual([`receiver.example:${server.port}`]);
});

test("a host the certificate does not name is refused by TLS", async () => {
  const answer = await post(`https://other.example:${server.port}/hook`);
  expect(answer.error).toBeString();
  expect(hosts).toHaveLength(1);
});
