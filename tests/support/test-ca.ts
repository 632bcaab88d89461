// Throwaway certificate authorities for TLS tests, made with the machine's openssl (EC P-256 keys: fast to make).
// Everything lives in one temporary folder the caller removes; nothing is trusted outside the test.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export type Issued = { cert: string; key: string };
export type TestCa = Issued & {
  /** A certificate signed by this CA: `cn` as subject, `san` as subjectAltName (e.g. `IP:127.0.0.1,DNS:localhost`). */
  issue: (name: string, subject: { cn: string; san?: string }) => Promise<Issued>;
};

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

async function openssl(dir: string, args: string[]): Promise<void> {
  const run = Bun.spawn(["openssl", ...args], { cwd: dir, stdout: "ignore", stderr: "pipe" });
  if ((await run.exited) !== 0) throw new Error(`openssl ${args[0]}: ${await new Response(run.stderr).text()}`);
}

/** A self-signed CA named `name` in `dir` (files `<name>.pem` and `<name>.key`), valid for a day. */
export async function createTestCa(dir: string, name: string): Promise<TestCa> {
  const ca = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
  await openssl(dir, ["req", "-x509", ...EC, "-keyout", ca.key, "-out", ca.cert, "-days", "1", "-subj", `/CN=${name}`]);
  return {
    ...ca,
    issue: async (leaf, subject) => {
      const out = { cert: join(dir, `${leaf}.pem`), key: join(dir, `${leaf}.key`) };
      const csr = join(dir, `${leaf}.csr`);
      await openssl(dir, ["req", ...EC, "-keyout", out.key, "-out", csr, "-subj", `/CN=${subject.cn}`]);
      const extensions = join(dir, `${leaf}.ext`);
      writeFileSync(extensions, subject.san ? `subjectAltName=${subject.san}\n` : "");
      const sign = [
        "-CA",
        ca.cert,
        "-CAkey",
        ca.key,
        "-set_serial",
        String(Math.floor(Math.random() * 2 ** 48)),
        "-days",
        "1",
      ];
      await openssl(dir, ["x509", "-req", "-in", csr, ...sign, "-out", out.cert, "-extfile", extensions]);
      return out;
    },
  };
}
