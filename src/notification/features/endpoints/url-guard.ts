// The guard against server-side request forgery: an endpoint URL may not reach the service's own network. Checked at
// registration and again at every delivery, on the addresses the host resolves to right then; the delivery connects
// to exactly the addresses checked (work/endpoints/post.ts), so a DNS answer that changes between the check and the
// connection (rebinding) gains nothing. NOTIFICATION_ENDPOINT_ALLOW_PRIVATE=true lifts the address check (tests, and
// receivers on a private network).
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { ApiError, badRequest } from "../../../shared/http/errors.ts";
import { addressRefusal } from "./address-class.ts";

export type Address = { address: string; family: 4 | 6 };
export type Resolve = (hostname: string) => Promise<Address[]>;

export const MAX_URL_LENGTH = 2048;

const refused = (message: string) => new ApiError(400, "ENDPOINT_URL_NOT_ALLOWED", message);

/** True when no endpoint may reach this address (address-class.ts says which are refused, and why). */
export const isForbiddenAddress = (address: string): boolean => addressRefusal(address) !== undefined;

/** An endpoint URL as given: http or https, a host, no user info; 400 otherwise. */
export function parseEndpointUrl(text: string): URL {
  if (text.length > MAX_URL_LENGTH) throw badRequest(`url must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw badRequest("url must be an absolute http or https URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw refused("url must use http or https");
  if (url.username !== "" || url.password !== "") throw refused("url must not contain user info");
  if (url.hostname === "") throw badRequest("url must name a host");
  return url;
}

/** The URL's host without the brackets of an IPv6 literal. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1");

export const systemResolve: Resolve = async (hostname) => {
  const found = await dnsLookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** Hostnames whose answers a caching resolver keeps at most; beyond, it starts over. */
const MAX_CACHED_HOSTS = 1_000;

/**
 * A resolver that keeps each hostname's answer `ttlMs`: a busy endpoint's deliveries resolve its name once per ttl
 * instead of once each. It caches the answer, not a verdict: every delivery still checks the addresses it gets
 * (allowedAddresses) and connects to those, so a cached answer can never reach an address the check refuses. A failed
 * resolution is not kept.
 */
export function cachingResolve(
  resolve: Resolve,
  ttlMs: number,
  clock: () => number = () => performance.now(),
): Resolve {
  const answers = new Map<string, { addresses: Promise<Address[]>; until: number }>();
  return (hostname) => {
    const now = clock();
    const kept = answers.get(hostname);
    if (kept && kept.until > now) return kept.addresses;
    if (answers.size >= MAX_CACHED_HOSTS) answers.clear();
    const addresses = resolve(hostname);
    answers.set(hostname, { addresses, until: now + ttlMs });
    addresses.catch(() => {
      if (answers.get(hostname)?.addresses === addresses) answers.delete(hostname);
    });
    return addresses;
  };
}

/**
 * Every address the URL's host stands for, each checked; throws ENDPOINT_URL_NOT_ALLOWED when any is forbidden (one
 * forbidden answer among several is refused too: a connection may go to any of them) and BAD_REQUEST when the host
 * does not resolve.
 */
export async function allowedAddresses(url: URL, options: { allowPrivate: boolean; resolve?: Resolve }) {
  const host = hostOf(url);
  const family = isIP(host);
  let addresses: Address[];
  if (family !== 0) addresses = [{ address: host, family: family === 6 ? 6 : 4 }];
  else {
    try {
      addresses = await (options.resolve ?? systemResolve)(host);
    } catch {
      throw badRequest(`the host ${host} does not resolve`);
    }
  }
  if (addresses.length === 0) throw badRequest(`the host ${host} does not resolve`);
  if (options.allowPrivate) return addresses;
  for (const { address } of addresses) {
    const why = addressRefusal(address);
    if (why) throw refused(`${host} is or resolves to an address endpoints may not reach (${address}: ${why})`);
  }
  return addresses;
}
