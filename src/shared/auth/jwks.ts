// The issuer's signing keys (JWKS), fetched by us rather than by jose's remote set, because an outage must keep the
// last good keys (jose drops them once they are older than its cache age) and be told once, not per request.
// An unknown key id refetches at most once per cooldown, and so does a set older than MAX_AGE_MS (in the background:
// requests keep using the keys at hand), so a key the issuer withdrew stops working within that age.
import { createLocalJWKSet, errors, type FlattenedJWSInput, type JSONWebKeySet, type JWSHeaderParameters } from "jose";
import { Counter, Gauge, type Registry } from "prom-client";
import { readBodyAtMost } from "../http/body.ts";
import type { Logger } from "../logger.ts";
import { isTrustedUrl, type JwtTrust } from "./jwt-config.ts";

/** Keys kept this long before a background refetch; jose's remote set uses the same default. */
const MAX_AGE_MS = 10 * 60_000;
const FETCH_TIMEOUT_MS = 5_000;
/** A discovery document or key set larger than this is not one. */
const MAX_DOCUMENT_BYTES = 256 * 1024;

/** No key was ever fetched: the JWT path cannot verify anything yet (503, not 401: the token may well be good). */
export class KeysUnavailable extends Error {
  constructor() {
    super("the issuer's signing keys were never fetched");
    this.name = "KeysUnavailable";
  }
}

export type KeySource = {
  /** The key a token names, for jose's jwtVerify; throws KeysUnavailable, or jose's JWKSNoMatchingKey. */
  key: (header: JWSHeaderParameters, token: FlattenedJWSInput) => Promise<CryptoKey>;
  /** Fetches now unless one fetch ran within the cooldown (main warms the keys at start). */
  refresh: () => Promise<void>;
  /** Starts a background refetch when the keys at hand are older than their age (and the cooldown allows). */
  refreshIfStale: () => void;
  /** Counts the key sets fetched: what was verified under an earlier one is verified again (auth/jwt.ts). */
  generation: () => number;
};

export type KeySourceDeps = {
  registry: Registry;
  /** Names the fetch metrics, `<prefix>_jwks_fetches_total` and `<prefix>_jwks_unreachable` (`entitlement_auth`). */
  metricPrefix: string;
  log: Logger;
  fetch?: typeof fetch;
  /** Monotonic milliseconds (default performance.now). */
  now?: () => number;
};

/**
 * The fetches' metrics, and their log: one warning when fetching starts to fail (an outage), one line when it works
 * again, nothing for the failures in between; one warning per key that cannot be imported, per key set fetched.
 */
function createFetchReport(registry: Registry, metricPrefix: string, log: Logger) {
  const fetches = new Counter({
    name: `${metricPrefix}_jwks_fetches_total`,
    help: "Fetches of the JWT issuer's signing keys, by outcome (ok, error).",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  const unreachable = new Gauge({
    name: `${metricPrefix}_jwks_unreachable`,
    help: "1 while the last fetch of the issuer's keys failed (the last good keys, if any, stay in use), else 0.",
    registers: [registry],
  });
  let failing = false;
  /** Key ids whose key could not be imported, told once each until the next fetch. */
  const unusable = new Set<string | undefined>();
  return {
    ok(): void {
      fetches.inc({ outcome: "ok" });
      unreachable.set(0);
      unusable.clear();
      if (failing) log.info("the issuer's signing keys were fetched again");
      failing = false;
    },
    unusable(kid: string | undefined, error: unknown): void {
      if (unusable.has(kid)) return;
      unusable.add(kid);
      const reason = error instanceof Error ? error.message : String(error);
      log.warn({ kid, reason }, "a key of the issuer's key set cannot be imported: tokens naming it are refused");
    },
    failed(error: unknown, keysHeld: boolean): void {
      fetches.inc({ outcome: "error" });
      unreachable.set(1);
      if (!failing) {
        const reason = error instanceof Error ? error.message : String(error);
        log.warn(
          { reason, keys_kept: keysHeld },
          keysHeld
            ? "the issuer's signing keys cannot be fetched: the last good keys stay in use"
            : "the issuer's signing keys cannot be fetched and none ever were: JWT callers get 503",
        );
      }
      failing = true;
    },
  };
}

async function getJson(fetcher: typeof fetch, url: string): Promise<Record<string, unknown>> {
  const response = await fetcher(url, {
    headers: { accept: "application/json" },
    redirect: "error",
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
  });
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`${url} answered ${response.status}`);
  }
  // Counted as it arrives: an endless or huge reply is cut off at the limit, never held whole.
  const bytes = await readBodyAtMost(response, MAX_DOCUMENT_BYTES);
  if (bytes === undefined) throw new Error(`${url} answered more than ${MAX_DOCUMENT_BYTES} bytes`);
  const body: unknown = JSON.parse(new TextDecoder().decode(bytes));
  if (typeof body !== "object" || body === null) throw new Error(`${url} did not answer a JSON object`);
  return body as Record<string, unknown>;
}

/** The jwks_uri of the issuer's discovery document, which must name the configured issuer exactly. */
async function discoverJwksUrl(fetcher: typeof fetch, issuer: string): Promise<string> {
  const url = `${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
  const document = await getJson(fetcher, url);
  if (document.issuer !== issuer) throw new Error(`${url} names another issuer`);
  const jwksUri = document.jwks_uri;
  if (typeof jwksUri !== "string" || !isTrustedUrl(jwksUri)) throw new Error(`${url} has no https jwks_uri`);
  return jwksUri;
}

/** The issuer's key set (discovered unless its URL is configured), ready for jose's key selection. */
async function fetchKeySet(fetcher: typeof fetch, settings: JwtTrust) {
  const url = settings.jwksUrl ?? (await discoverJwksUrl(fetcher, settings.issuer));
  return createLocalJWKSet((await getJson(fetcher, url)) as unknown as JSONWebKeySet);
}

/**
 * The token's key from `set`. A published key that WebCrypto cannot import (a malformed modulus or point: a
 * DOMException, not a JOSE error) is no key at all, so the token is refused as naming an unknown key (401), not a 500.
 */
async function importable(
  set: ReturnType<typeof createLocalJWKSet>,
  header: JWSHeaderParameters,
  token: FlattenedJWSInput,
  report: Pick<ReturnType<typeof createFetchReport>, "unusable">,
): Promise<CryptoKey> {
  try {
    return await set(header, token);
  } catch (error) {
    if (error instanceof errors.JOSEError) throw error;
    report.unusable(header.kid, error);
    throw new errors.JWKSNoMatchingKey("a key of the issuer's key set cannot be imported", { cause: error });
  }
}

export function createKeySource(settings: JwtTrust, deps: KeySourceDeps): KeySource {
  const fetcher = deps.fetch ?? fetch;
  const now = deps.now ?? (() => performance.now());
  const report = createFetchReport(deps.registry, deps.metricPrefix, deps.log);
  let keys: ReturnType<typeof createLocalJWKSet> | undefined;
  let fetchedAt = Number.NEGATIVE_INFINITY;
  let attemptedAt = Number.NEGATIVE_INFINITY;
  let inFlight: Promise<void> | undefined;
  let generation = 0;

  async function load(): Promise<void> {
    attemptedAt = now();
    try {
      keys = await fetchKeySet(fetcher, settings);
      fetchedAt = now();
      generation += 1;
      report.ok();
    } catch (error) {
      report.failed(error, keys !== undefined);
    }
  }

  const coolingDown = () => now() - attemptedAt < settings.cooldownMs;
  function refresh(): Promise<void> {
    if (inFlight) return inFlight;
    if (coolingDown()) return Promise.resolve();
    inFlight = load().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  }

  function refreshIfStale(): void {
    if (keys && now() - fetchedAt > MAX_AGE_MS) void refresh();
  }

  async function key(header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey> {
    if (!keys) await refresh();
    else refreshIfStale();
    const held = keys;
    if (!held) throw new KeysUnavailable();
    try {
      return await importable(held, header, token, report);
    } catch (error) {
      // A key id never seen: the issuer may have rotated; look again (or wait for the fetch under way), unless we
      // did within the cooldown.
      if (!(error instanceof errors.JWKSNoMatchingKey) || (coolingDown() && !inFlight)) throw error;
      await refresh();
      return importable(keys ?? held, header, token, report);
    }
  }

  return { key, refresh, refreshIfStale, generation: () => generation };
}
