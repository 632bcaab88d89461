// One webhook request to an endpoint, to an address the URL guard checked while the Host header and TLS server name
// stay the URL's host. An http URL goes through `fetch` to the checked address itself (an IP literal: nothing is
// resolved again), which costs about a fifth of the CPU of node:http in Bun and keeps its connections alive; https,
// and http beyond FETCH_SHARE requests in flight, go through node:http(s) with a `lookup` that answers the checked
// addresses. Redirects are not followed (a 3xx is an answer like any other non-2xx), and at most RESPONSE_READ_LIMIT
// bytes of the answer are read before the connection is dropped. On both paths the status decides once it came: a
// body cut off or stalled past the timeout leaves the excerpt empty, not the attempt failed.
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import type { Address } from "../../features/endpoints/url-guard.ts";

/** Bytes of a response read at most; the excerpt kept is shorter still (endpoints/deliver.ts). */
export const RESPONSE_READ_LIMIT = 16 * 1024;

/** `retryAfter`: the answer's Retry-After header, for the callers that honour it (pushes). */
export type PostResult = { statusCode: number; body: string; retryAfter?: string };
export type PostRequest = {
  url: URL;
  addresses: Address[];
  headers: Record<string, string>;
  /** Text (a webhook's JSON) or bytes (an encrypted push). */
  body: string | Uint8Array;
  timeoutMs: number;
};

/**
 * Requests of this module in flight through `fetch`, and the most it may have. Bun runs at most 256 fetches at once in a
 * process (BUN_CONFIG_MAX_HTTP_REQUESTS) and queues the rest; beyond this share the requests take node:http, which has
 * no such limit, so hanging endpoints can never make another endpoint's request wait in that queue (nor the configured
 * channel's, which uses fetch too).
 */
let fetching = 0;
export const FETCH_SHARE = 128;

function pinnedLookup(addresses: Address[]): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    const first = addresses[0] as Address;
    if (options?.all) callback(null, addresses);
    else callback(null, first.address, first.family);
  }) as unknown as LookupFunction;
}

/**
 * At most RESPONSE_READ_LIMIT bytes of an answer, for both request paths (a fetch's body and node:http's response are
 * both streams of chunks); leaving the loop early cancels the stream, which drops the connection.
 */
async function readPrefix(body: AsyncIterable<Uint8Array> | null): Promise<string> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of body ?? []) {
    chunks.push(chunk.subarray(0, RESPONSE_READ_LIMIT - total));
    total += chunk.length;
    if (total >= RESPONSE_READ_LIMIT) break;
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** A fetch's answer: a declared length within the limit is read whole, as fetch frames it (cheaper than a stream). */
function fetchedBody(response: Response): Promise<string> {
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  return declared <= RESPONSE_READ_LIMIT ? response.text() : readPrefix(response.body);
}

/** An http request to the first checked address, the URL's host in the Host header; errors name the address tried. */
async function postThroughFetch(request: PostRequest): Promise<PostResult> {
  const first = request.addresses[0] as Address;
  const { protocol, port, pathname, search } = request.url;
  const address = first.family === 6 ? `[${first.address}]` : first.address;
  const target = `${protocol}//${address}${port ? `:${port}` : ""}${pathname}${search}`;
  const signal = AbortSignal.timeout(request.timeoutMs);
  fetching++;
  try {
    const response = await fetch(target, {
      method: "POST",
      headers: { ...request.headers, host: request.url.host },
      body: request.body,
      redirect: "manual",
      signal,
    });
    // An answer cut off or stalled while its body is read is still an answer, as on node:http below.
    const retryAfter = response.headers.get("retry-after") ?? undefined;
    return { statusCode: response.status, body: await fetchedBody(response).catch(() => ""), retryAfter };
  } catch (error) {
    if (signal.aborted) throw new Error(`timed out after ${request.timeoutMs}ms`);
    const code = (error as { code?: unknown }).code;
    const to = `${address}${port ? `:${port}` : ""}`;
    throw new Error(`${typeof code === "string" ? `${code} ` : ""}${to}: ${errorMessage(error)}`);
  } finally {
    fetching--;
  }
}

const errorMessage = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Resolves with the status and the start of the body; rejects on a network error or after `timeoutMs` in all. */
export function postToEndpoint(request: PostRequest): Promise<PostResult> {
  if (request.url.protocol === "http:" && fetching < FETCH_SHARE) return postThroughFetch(request);
  return postThroughNode(request);
}

function postThroughNode(request: PostRequest): Promise<PostResult> {
  const client = request.url.protocol === "https:" ? https : http;
  return new Promise<PostResult>((resolve, reject) => {
    let answer: http.IncomingMessage | undefined;
    const timer = setTimeout(() => {
      // An answer that came keeps its status: only the read of its body is cut short.
      if (answer) answer.destroy();
      else req.destroy(new Error(`timed out after ${request.timeoutMs}ms`));
    }, request.timeoutMs);
    const req = client.request(
      request.url,
      {
        method: "POST",
        headers: { ...request.headers, "content-length": String(Buffer.byteLength(request.body)) },
        lookup: pinnedLookup(request.addresses),
      },
      (response) => {
        answer = response;
        // An answer cut off or stalled while read is still an answer: its status counts.
        readPrefix(response)
          .catch(() => "")
          .then((body) => {
            clearTimeout(timer);
            const retryAfter = response.headers["retry-after"];
            resolve({ statusCode: response.statusCode ?? 0, body, retryAfter });
          });
      },
    );
    req.on("error", (error) => {
      if (answer) return; // settled by the answer's read
      clearTimeout(timer);
      reject(error);
    });
    req.end(request.body);
  });
}
