// libpq's TLS parameters of a PostgreSQL URL (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`), mapped to postgres.js's
// `ssl` option (ADR-22). postgres.js reads `sslmode` only in part (`verify-ca` checks the host name as `verify-full`
// does, against the runtime's roots; `allow` insists on TLS) and sends every parameter it does not know to the server
// as a setting, which the server refuses: so they are read here and removed from the URL postgres.js receives.
import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import type { ConnectionOptions } from "node:tls";

export const SSL_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] as const;

/** What postgres.js takes as `ssl`: no TLS, TLS when the server offers it (unverified), or tls.connect options. */
export type PostgresSsl = false | "prefer" | ConnectionOptions;

/** A URL whose TLS parameters cannot be honoured; the message names the parameter, never the URL or a password. */
export class DatabaseTlsError extends Error {
  override name = "DatabaseTlsError";
}

const MAPPED = ["sslmode", "sslrootcert", "sslcert", "sslkey"];
/** libpq parameters postgres.js would send to the server as settings, and `ssl`, postgres.js's own, read by no libpq client. */
const REFUSED = /^(ssl(?!negotiation$).*|requiressl)$/;

export type ReadFile = (path: string) => string;
const readText: ReadFile = (path) => readFileSync(path, "utf8");

/** `url` without its libpq TLS parameters, and the `ssl` option that honours them. Throws DatabaseTlsError. */
export function postgresTls(url: string, read: ReadFile = readText): { url: string; ssl: PostgresSsl } {
  const start = url.indexOf("?", url.indexOf("://") + 3);
  if (start < 0) return { url, ssl: "prefer" };
  const end = url.indexOf("#", start);
  const params = new URLSearchParams(url.slice(start + 1, end < 0 ? undefined : end));
  for (const name of params.keys()) {
    if (!MAPPED.includes(name) && REFUSED.test(name))
      throw new DatabaseTlsError(`the parameter ${name} is not supported (only sslmode, sslrootcert, sslcert, sslkey)`);
  }
  const ssl = sslOption(params, read);
  for (const name of MAPPED) params.delete(name);
  const rest = params.toString();
  return { url: url.slice(0, start) + (rest ? `?${rest}` : ""), ssl };
}

function sslOption(params: URLSearchParams, read: ReadFile): PostgresSsl {
  const rootcert = params.get("sslrootcert") ?? undefined;
  const cert = params.get("sslcert") ?? undefined;
  const key = params.get("sslkey") ?? undefined;
  // libpq 16: sslrootcert=system makes verify-full the default, and allows no weaker mode.
  const mode = params.get("sslmode") ?? (rootcert === "system" ? "verify-full" : "prefer");
  if (!(SSL_MODES as readonly string[]).includes(mode))
    throw new DatabaseTlsError(`sslmode=${JSON.stringify(mode)} is not one of ${SSL_MODES.join(", ")}`);
  if (rootcert === "system" && mode !== "verify-full")
    throw new DatabaseTlsError(`sslrootcert=system needs sslmode=verify-full, not ${mode}`);
  if (Boolean(cert) !== Boolean(key)) throw new DatabaseTlsError("sslcert and sslkey must be set together");
  if ((mode === "verify-ca" || mode === "verify-full") && !rootcert)
    throw new DatabaseTlsError(
      `sslmode=${mode} needs sslrootcert: the CA file that signed the server's certificate, or system for the runtime's trusted roots`,
    );
  if (mode === "disable") return false;

  const options: ConnectionOptions = {};
  if (rootcert && rootcert !== "system") options.ca = readPem(read, "sslrootcert", rootcert, certificate);
  if (cert && key) {
    options.cert = readPem(read, "sslcert", cert, certificate);
    options.key = readPem(read, "sslkey", key, (pem) => void createPrivateKey(pem));
  }
  // libpq: require with a root certificate behaves as verify-ca.
  const verify = mode === "verify-full" ? "full" : mode === "verify-ca" || (mode === "require" && rootcert) ? "ca" : "";
  if (!verify) {
    // Only the string lets postgres.js fall back to plain text when the server offers no TLS; with a client
    // certificate TLS is required (postgres.js has no fallback for options), as it must be for `hostssl ... cert`.
    if ((mode === "allow" || mode === "prefer") && !options.cert) return "prefer";
    return { ...options, rejectUnauthorized: false };
  }
  options.rejectUnauthorized = true;
  // verify-ca: the chain must lead to the CA, whatever name the certificate carries.
  if (verify === "ca") options.checkServerIdentity = () => undefined;
  return options;
}

const certificate = (pem: string) => void new X509Certificate(pem);

/** The file's text, checked by `parse` now, so a bad file stops the process at boot (exit 78) instead of every connect. */
function readPem(read: ReadFile, parameter: string, path: string, parse: (pem: string) => void): string {
  let pem: string;
  try {
    pem = read(path);
  } catch (error) {
    throw new DatabaseTlsError(`${parameter}=${path} cannot be read (${reason(error)})`);
  }
  try {
    parse(pem);
  } catch (error) {
    throw new DatabaseTlsError(`${parameter}=${path} is not a usable PEM file (${(error as Error).message})`);
  }
  return pem;
}

const reason = (error: unknown) =>
  (error as { code?: string }).code ?? (error instanceof Error ? error.message : String(error));
