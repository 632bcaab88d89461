// Assembles the whole root file system of a service image in one folder, so the Dockerfile's FROM scratch stage is a
// single `COPY --from=builder /rootfs/ /`: the executable as /app/service, every shared library `ldd` lists (a compiled
// Bun binary is dynamically linked against glibc) at the path the loader looks for it, and the CA bundle for outbound
// TLS (webhooks). The scratch-root test builds the same folder on the host and runs the service in it.
//   bun run tools/image-root.ts <executable> <root folder>
import { chmodSync, copyFileSync, existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";

export const CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";
export const SERVICE_PATH = "/app/service";

/** Absolute paths of the libraries the dynamic loader maps for `binary` (the vDSO has none), loader included. */
export function sharedLibraries(binary: string): string[] {
  const r = Bun.spawnSync(["ldd", binary], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`ldd ${binary} failed: ${r.stderr.toString().trim()}`);
  return [...r.stdout.toString().matchAll(/(\/\S+) \(0x/g)].map((m) => m[1] as string);
}

function place(root: string, source: string, target: string, mode: number): void {
  const path = join(root, target);
  mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
  copyFileSync(source, path); // follows symlinks: the file's content lands at the path the loader asks for
  chmodSync(path, mode);
}

/** Fills `root` with everything the service image holds; returns the image paths it wrote. */
export function assembleRoot(binary: string, root: string): string[] {
  if (!existsSync(CA_BUNDLE)) throw new Error(`${CA_BUNDLE} is missing: install ca-certificates in the builder`);
  mkdirSync(root, { recursive: true, mode: 0o755 });
  chmodSync(root, 0o755);
  const libraries = sharedLibraries(binary);
  for (const library of libraries) place(root, library, library, 0o755);
  place(root, CA_BUNDLE, CA_BUNDLE, 0o644);
  place(root, binary, SERVICE_PATH, 0o755);
  return [...libraries, CA_BUNDLE, SERVICE_PATH];
}

if (import.meta.main) {
  const [binary, root] = process.argv.slice(2);
  if (!binary || !root) {
    console.error("usage: bun run tools/image-root.ts <executable> <root folder>");
    process.exit(2);
  }
  for (const path of assembleRoot(binary, root)) console.log(path);
}
