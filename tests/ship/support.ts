// Shared by the ship tests: build the executables once per test process (into a temporary folder, so a developer's
// dist/ is never overwritten mid-run), pick free ports, and wait for an HTTP endpoint.

import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import postgres from "postgres";
import { buildService, defaultTarget, type ServiceName } from "../../tools/build.ts";
import { postgresAdminUrl, uniqueName } from "../support/infra.ts";
import { waitUntil } from "../support/wait.ts";

export const repoRoot = resolve(import.meta.dir, "../..");

/** Executables are about 100 MiB each: folders of test processes that are gone are removed before building again. */
function removeStaleBuilds(): void {
  for (const entry of readdirSync(tmpdir())) {
    const pid = Number(/^ship-dist-(\d+)$/.exec(entry)?.[1]);
    if (!pid || pid === process.pid) continue;
    try {
      process.kill(pid, 0);
    } catch {
      rmSync(join(tmpdir(), entry), { recursive: true, force: true });
    }
  }
}
removeStaleBuilds();
const outdir = join(tmpdir(), `ship-dist-${process.pid}`);
mkdirSync(outdir, { recursive: true });
process.on("exit", () => rmSync(outdir, { recursive: true, force: true }));
const builds = new Map<ServiceName, Promise<string>>();

/** The path of a freshly compiled executable of `name`, built at most once per test process. */
export function builtBinary(name: ServiceName): Promise<string> {
  let build = builds.get(name);
  if (!build) {
    build = buildService(name, { target: defaultTarget(), outdir });
    builds.set(name, build);
  }
  return build;
}

/** Polls `url` until it answers 200 (resolves the response) or `timeoutMs` passes (throws, naming the last outcome). */
export async function waitForOk(url: string, timeoutMs: number, alive: () => boolean = () => true): Promise<Response> {
  let last = "no answer";
  const ok = async () => {
    if (!alive()) throw new Error(`the process exited before ${url} answered 200 (last: ${last})`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (response.status === 200) return response;
      last = `status ${response.status}`;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    return undefined;
  };
  return waitUntil(ok, `${url} to answer 200`, timeoutMs, 200).catch((error: Error) => {
    throw new Error(`${error.message} (last: ${last})`, { cause: error });
  });
}

/** An empty database of its own, for an executable to migrate: its URL, and `drop` (which also ends the admin pool). */
export async function emptyDatabase(prefix: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = uniqueName(prefix);
  const adminUrl = await postgresAdminUrl();
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    },
  };
}

export { freePort } from "../support/process.ts";
