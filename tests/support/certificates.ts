// Throwaway X.509 material for TLS tests, made with openssl in a folder of the test's own: one CA, server
// certificates for 127.0.0.1 and client certificates, all signed by that CA (EC P-256 keys: fast to make).
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export type CertificatePair = { cert: string; key: string };

export type TestCa = {
  /** PEM file of the CA certificate (what a client or server trusts). */
  ca: string;
  /** A certificate for 127.0.0.1 (subjectAltName IP:127.0.0.1, unless `subjectAltName` names others) with serverAuth. */
  server: (name: string, subjectAltName?: string) => Promise<CertificatePair>;
  /** A certificate whose subject is CN=`commonName`, with clientAuth. */
  client: (commonName: string) => Promise<CertificatePair>;
};

async function openssl(dir: string, ...args: string[]): Promise<void> {
  const run = Bun.spawn(["openssl", ...args], { cwd: dir, stdout: "ignore", stderr: "pipe" });
  if ((await run.exited) !== 0) throw new Error(`openssl ${args[0]}: ${await new Response(run.stderr).text()}`);
}

const EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

/** Makes a CA named `commonName` in `dir` (ca.pem, ca.key) and returns what signs further certificates with it. */
export async function createTestCa(dir: string, commonName = "test-ca"): Promise<TestCa> {
  await openssl(
    dir,
    "req",
    "-x509",
    ...EC_KEY,
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "1",
    "-subj",
    `/CN=${commonName}`,
  );
  let serial = 0;
  const sign = async (name: string, subject: string, extensions: string): Promise<CertificatePair> => {
    await openssl(dir, "req", ...EC_KEY, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subject);
    writeFileSync(join(dir, `${name}.ext`), extensions);
    await openssl(
      dir,
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca.key",
      "-set_serial",
      String(++serial),
      "-out",
      `${name}.pem`,
      "-days",
      "1",
      "-extfile",
      `${name}.ext`,
    );
    return { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
  };
  return {
    ca: join(dir, "ca.pem"),
    server: (name, subjectAltName = "IP:127.0.0.1") =>
      sign(name, "/CN=127.0.0.1", `subjectAltName=${subjectAltName}\nextendedKeyUsage=serverAuth\n`),
    client: (commonName) => sign(`client-${commonName}`, `/CN=${commonName}`, "extendedKeyUsage=clientAuth\n"),
  };
}
