// Checks of the NATS settings the client would only discover when connecting, made once at boot so that a setting
// that can never work stops the process (exit 78, naming the variable) instead of a link that never comes up: a server
// list the client cannot parse or reach through its transport, and TLS files that are no PEM certificate or key.
import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { hideCredentials } from "./credentials.ts";

/** The schemes the TCP client takes (tls:// asks for TLS); ws:// and wss:// need another transport. */
const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;
const SCHEMES = new Set(["nats", "tls"]);

/** Why one entry of NATS_URL cannot be a server the client connects to, or undefined. */
function serverProblem(server: string): string | undefined {
  if (server === "") return "an empty server between commas";
  const scheme = SCHEME.exec(server)?.[1]?.toLowerCase();
  if (scheme !== undefined && !SCHEMES.has(scheme)) return `unsupported scheme ${scheme}:// (use nats:// or tls://)`;
  let url: URL;
  try {
    url = new URL(scheme === undefined ? `nats://${server}` : `nats://${server.slice(scheme.length + 3)}`);
  } catch {
    return "not a host[:port] (a port is 1 to 65535, given once)";
  }
  if (url.hostname === "") return "no host";
  if (url.port === "0") return "port 0";
  if ((url.pathname !== "" && url.pathname !== "/") || url.search !== "" || url.hash !== "")
    return "a server takes no path, query or fragment";
  return undefined;
}

/** NATS_URL: one or more comma-separated servers `[nats://|tls://][user:password@]host[:port]`. */
export function natsUrlProblem(value: string): string | undefined {
  const problems = value.split(",").map((s) => serverProblem(s.trim()));
  const first = problems.find(Boolean);
  if (!first) return undefined;
  return `NATS_URL=${JSON.stringify(hideCredentials(value))} is invalid: ${first}; expected comma-separated servers such as nats://127.0.0.1:4222`;
}

type TlsFiles = { NATS_TLS_CA?: string; NATS_TLS_CERT?: string; NATS_TLS_KEY?: string };

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----/;

function readRegularFile(path: string): Buffer | undefined {
  try {
    return statSync(path).isFile() ? readFileSync(path) : undefined;
  } catch {
    return undefined;
  }
}

function certificateOf(pem: Buffer): X509Certificate | undefined {
  try {
    return PEM_CERTIFICATE.test(pem.toString("latin1")) ? new X509Certificate(pem) : undefined;
  } catch {
    return undefined;
  }
}

function privateKeyOf(pem: Buffer): KeyObject | undefined {
  try {
    return createPrivateKey(pem);
  } catch {
    return undefined;
  }
}

/**
 * The TLS files as the client will use them: NATS_TLS_CA and NATS_TLS_CERT a PEM certificate, NATS_TLS_KEY a PEM private
 * key, and the key the certificate's (a swapped pair, or a key of another certificate, is named). Unreadable files are
 * reported by natsSecurityRule; the messages name the path, never the file's content.
 */
export function natsTlsFileProblems(e: TlsFiles): string[] {
  const problems: string[] = [];
  const bad = (name: string, expected: string) =>
    problems.push(`${name}=${JSON.stringify(e[name as keyof TlsFiles])} is invalid: expected ${expected}`);
  const ca = e.NATS_TLS_CA === undefined ? undefined : readRegularFile(e.NATS_TLS_CA);
  if (e.NATS_TLS_CA !== undefined && !(ca && certificateOf(ca))) bad("NATS_TLS_CA", "a PEM file of CA certificates");
  if (e.NATS_TLS_CERT === undefined || e.NATS_TLS_KEY === undefined) return problems;
  const certText = readRegularFile(e.NATS_TLS_CERT);
  const keyText = readRegularFile(e.NATS_TLS_KEY);
  const cert = certText && certificateOf(certText);
  const key = keyText && privateKeyOf(keyText);
  if (!cert) bad("NATS_TLS_CERT", "a PEM certificate (NATS_TLS_KEY takes the private key: are the two swapped?)");
  if (!key) bad("NATS_TLS_KEY", "a PEM private key (NATS_TLS_CERT takes the certificate: are the two swapped?)");
  if (cert && key && !cert.checkPrivateKey(key)) {
    problems.push("NATS_TLS_KEY is not the private key of NATS_TLS_CERT: give the pair that belongs together");
  }
  return problems;
}
