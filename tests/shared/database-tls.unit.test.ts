// libpq's TLS parameters of DATABASE_URL mapped to postgres.js's `ssl` option (src/shared/database-tls.ts, ADR-22).
// Files are served from memory; tests/shared/postgres-tls.int.test.ts proves the mapping against a real server.
import { describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import type { ConnectionOptions, PeerCertificate } from "node:tls";
import { DatabaseTlsError, type PostgresSsl, postgresTls } from "../../src/shared/database-tls.ts";

/** A self-signed certificate, only parsed here (never trusted by anything). */
const CERT = `-----BEGIN CERTIFICATE-----
MIIBjzCCATWgAwIBAgIUBEv4i1KNBK3Qq54XAYRFOOuksIwwCgYIKoZIzj0EAwIw
HDEaMBgGA1UEAwwRdW5pdC10ZXN0LWZpeHR1cmUwIBcNMjYxMTI2MDUyMDMyWhgP
MjEyNjExMDIwNTIwMzJaMBwxGjAYBgNVBAMMEXVuaXQtdGVzdC1maXh0dXJlMFkw
EwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEmGBEZ6Q4GSbg2EOSTf70WCxpUH4EKvF4
lyN9trhFEkUqKldjqzLRAqG/Ca7VYHx+9PsdctccldS3lZ5g1+lFC6NTMFEwHQYD
VR0OBBYEFIIXnoxiZ0ebJtZy/B+4Z/TMoUzzMB8GA1UdIwQYMBaAFIIXnoxiZ0eb
JtZy/B+4Z/TMoUzzMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIh
APek+k4EdQh9mEutS29ToFmI6zic71KrsyMBgQkjVcQyAiAVEgkrhSTp2UaiOeym
sQw3HKUztnsu+3+v9EDnENi1pg==
-----END CERTIFICATE-----
`;
const KEY = generateKeyPairSync("ec", { namedCurve: "prime256v1" })
  .privateKey.export({ type: "pkcs8", format: "pem" })
  .toString();
const FILES: Record<string, string> = { "/etc/db/ca.pem": CERT, "/etc/db/client.pem": CERT, "/etc/db/client.key": KEY };
const read = (path: string) => {
  const text = FILES[path];
  if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: "ENOENT" });
  return text;
};

const BASE = "postgres://app:s3cret@db.internal:5432/app";
const map = (query: string) => postgresTls(`${BASE}?${query}`, read);
const options = (ssl: PostgresSsl) => ssl as ConnectionOptions;
function refusal(query: string): string {
  try {
    map(query);
  } catch (error) {
    expect(error).toBeInstanceOf(DatabaseTlsError);
    expect((error as Error).message, "no part of the password").not.toContain("s3cret");
    return (error as Error).message;
  }
  throw new Error(`?${query} was accepted`);
}
/** A certificate whose names do not include the host: Node's own check refuses it, verify-ca must not. */
const otherName = { subject: { CN: "elsewhere" }, subjectaltname: "DNS:elsewhere" } as unknown as PeerCertificate;

describe("sslmode", () => {
  test("absent means prefer, as in libpq: TLS when the server offers it, plain text otherwise", () => {
    expect(postgresTls(BASE, read)).toEqual({ url: BASE, ssl: "prefer" });
    expect(map("application_name=x")).toEqual({ url: `${BASE}?application_name=x`, ssl: "prefer" });
  });

  test("disable: no TLS at all", () => {
    expect(map("sslmode=disable")).toEqual({ url: BASE, ssl: false });
  });

  test("allow and prefer: TLS when offered, never verified", () => {
    expect(map("sslmode=allow").ssl).toBe("prefer");
    expect(map("sslmode=prefer").ssl).toBe("prefer");
  });

  test("require: TLS always, the certificate not verified", () => {
    expect(map("sslmode=require")).toEqual({ url: BASE, ssl: { rejectUnauthorized: false } });
  });

  test("require with sslrootcert verifies the chain as verify-ca does (libpq's compatibility rule)", () => {
    const ssl = options(map("sslmode=require&sslrootcert=/etc/db/ca.pem").ssl);
    expect(ssl).toMatchObject({ ca: CERT, rejectUnauthorized: true });
    expect(ssl.checkServerIdentity?.("db.internal", otherName)).toBeUndefined();
  });

  test("verify-ca: the chain must lead to sslrootcert, any host name is accepted", () => {
    const ssl = options(map("sslmode=verify-ca&sslrootcert=/etc/db/ca.pem").ssl);
    expect(ssl).toMatchObject({ ca: CERT, rejectUnauthorized: true });
    expect(ssl.checkServerIdentity?.("db.internal", otherName), "no host name check").toBeUndefined();
  });

  test("verify-full: the chain and the host name, with the runtime's own name check", () => {
    const ssl = options(map("sslmode=verify-full&sslrootcert=/etc/db/ca.pem").ssl);
    expect(ssl).toEqual({ ca: CERT, rejectUnauthorized: true });
  });

  test("verify-ca and verify-full need sslrootcert (no ~/.postgresql default)", () => {
    expect(refusal("sslmode=verify-full")).toContain("sslmode=verify-full needs sslrootcert");
    expect(refusal("sslmode=verify-ca")).toContain("sslmode=verify-ca needs sslrootcert");
  });

  test("sslrootcert=system: verify-full against the runtime's roots, the default mode; nothing weaker", () => {
    expect(map("sslrootcert=system").ssl).toEqual({ rejectUnauthorized: true });
    expect(map("sslmode=verify-full&sslrootcert=system").ssl).toEqual({ rejectUnauthorized: true });
    expect(refusal("sslmode=require&sslrootcert=system")).toContain("sslrootcert=system needs sslmode=verify-full");
  });

  test("an unknown mode is refused, naming the allowed ones", () => {
    expect(refusal("sslmode=verify_full")).toBe(
      'sslmode="verify_full" is not one of disable, allow, prefer, require, verify-ca, verify-full',
    );
  });
});

describe("client certificates", () => {
  test("sslcert and sslkey are read and handed to TLS", () => {
    const ssl = options(
      map("sslmode=verify-full&sslrootcert=/etc/db/ca.pem&sslcert=/etc/db/client.pem&sslkey=/etc/db/client.key").ssl,
    );
    expect(ssl).toEqual({ ca: CERT, cert: CERT, key: KEY, rejectUnauthorized: true });
  });

  test("with a client certificate, prefer requires TLS (postgres.js has no plain fallback with options)", () => {
    expect(map("sslcert=/etc/db/client.pem&sslkey=/etc/db/client.key").ssl).toEqual({
      cert: CERT,
      key: KEY,
      rejectUnauthorized: false,
    });
  });

  test("one without the other is refused", () => {
    expect(refusal("sslmode=require&sslcert=/etc/db/client.pem")).toBe("sslcert and sslkey must be set together");
    expect(refusal("sslmode=require&sslkey=/etc/db/client.key")).toBe("sslcert and sslkey must be set together");
  });
});

describe("files", () => {
  test("a missing file is refused with the parameter, the path and the reason", () => {
    expect(refusal("sslmode=verify-full&sslrootcert=/etc/db/nope.pem")).toBe(
      "sslrootcert=/etc/db/nope.pem cannot be read (ENOENT)",
    );
  });

  test("a file that is not the expected PEM is refused at once, not at every connection", () => {
    expect(refusal("sslmode=verify-full&sslrootcert=/etc/db/client.key")).toStartWith(
      "sslrootcert=/etc/db/client.key is not a usable PEM file",
    );
    const swapped = refusal("sslmode=require&sslcert=/etc/db/client.pem&sslkey=/etc/db/ca.pem");
    expect(swapped).toStartWith("sslkey=/etc/db/ca.pem is not a usable PEM file");
    expect(swapped, "the message quotes no file content").not.toContain("BEGIN");
  });

  test("a percent-encoded path is decoded", () => {
    FILES["/etc/db/my ca.pem"] = CERT;
    expect(options(map("sslmode=verify-full&sslrootcert=%2Fetc%2Fdb%2Fmy%20ca.pem").ssl).ca).toBe(CERT);
  });
});

describe("the URL postgres.js receives", () => {
  test("loses the TLS parameters and keeps every other parameter and every host", () => {
    const url =
      "postgres://app:pw@h1:5432,h2:5433/app?sslmode=verify-full&target_session_attrs=read-write&sslrootcert=/etc/db/ca.pem&application_name=a%20b#frag";
    expect(postgresTls(url, read).url).toBe(
      "postgres://app:pw@h1:5432,h2:5433/app?target_session_attrs=read-write&application_name=a+b",
    );
  });

  test("other TLS parameters, which postgres.js would send to the server as settings, are refused", () => {
    for (const name of ["sslpassword", "sslcrl", "sslsni", "sslcompression", "requiressl", "ssl"])
      expect(refusal(`${name}=1`)).toStartWith(`the parameter ${name} is not supported`);
    expect(map("sslnegotiation=postgres").url, "postgres.js reads sslnegotiation itself").toContain(
      "sslnegotiation=postgres",
    );
  });
});
