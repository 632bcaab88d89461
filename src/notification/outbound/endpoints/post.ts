// One webhook request to an endpoint, through node:http(s) with a `lookup` that answers the addresses the URL guard
// checked: the connection goes to a checked address while the Host header and TLS server name stay the URL's host.
// Redirects are not followed (a 3xx is an answer like any other non-2xx), and at most RESPONSE_READ_LIMIT bytes of the
// answer are read before the connection is dropped.
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import type { Address } from "./url-guard.ts";

/** Bytes of a response read at most; the excerpt kept is shorter still (endpoints/deliver.ts). */
export const RESPONSE_READ_LIMIT = 16 * 1024;

export type PostResult = { statusCode: number; body: string };
export type PostRequest = {
  url: URL;
  addresses: Address[];
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
};

function pinnedLookup(addresses: Address[]): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    const first = addresses[0] as Address;
    if (options?.all) callback(null, addresses);
    else callback(null, first.address, first.family);
  }) as unknown as LookupFunction;
}

function readBounded(response: http.IncomingMessage, resolve: (body: string) => void): void {
  const chunks: Buffer[] = [];
  let total = 0;
  const finish = () => resolve(Buffer.concat(chunks).toString("utf8"));
  response.on("data", (chunk: Buffer) => {
    if (total >= RESPONSE_READ_LIMIT) return;
    chunks.push(chunk.subarray(0, RESPONSE_READ_LIMIT - total));
    total += chunk.length;
    if (total >= RESPONSE_READ_LIMIT) {
      response.destroy();
      finish();
    }
  });
  response.on("end", finish);
  response.on("error", finish);
}

/** Resolves with the status and the start of the body; rejects on a network error or after `timeoutMs` in all. */
export function postToEndpoint(request: PostRequest): Promise<PostResult> {
  const client = request.url.protocol === "https:" ? https : http;
  return new Promise<PostResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      req.destroy(new Error(`timed out after ${request.timeoutMs}ms`));
    }, request.timeoutMs);
    const req = client.request(
      request.url,
      {
        method: "POST",
        headers: { ...request.headers, "content-length": String(Buffer.byteLength(request.body)) },
        lookup: pinnedLookup(request.addresses),
      },
      (response) =>
        readBounded(response, (body) => {
          clearTimeout(timer);
          resolve({ statusCode: response.statusCode ?? 0, body });
        }),
    );
    req.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(request.body);
  });
}
