// Both compiled executables running side by side on the test PostgreSQL and NATS, with their own database, stream,
// subject and durable names: what the deploy tests scrape, trace or watch with strace. `wrap` prefixes each command
// (strace).
import { readFileSync } from "node:fs";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { builtBinary, freePort, waitForOk } from "../ship/support.ts";
import { natsUrl, openTestDatabase, uniqueName } from "../support/infra.ts";
import { pipelineNatsNames, pipelineStreams } from "../support/nats-names.ts";

export type RunningService = { url: string; pid: number; stop: () => Promise<number>; output: () => Promise<string> };
export type Pair = { entitlement: RunningService; notification: RunningService; close: () => Promise<void> };

async function start(
  name: "entitlement" | "notification",
  env: Record<string, string>,
  wrap: (name: string) => string[],
): Promise<RunningService> {
  const port = freePort();
  const proc = Bun.spawn([...wrap(name), await builtBinary(name), "serve"], {
    env: { PATH: process.env.PATH, LOG_LEVEL: "info", ...env, PORT: String(port), HOST: "127.0.0.1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const output = Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]).then((o) =>
    o.join("\n"),
  );
  const url = `http://127.0.0.1:${port}`;
  await waitForOk(`${url}/readyz`, 90_000, () => proc.exitCode === null).catch(async (error) => {
    proc.kill("SIGKILL");
    throw new Error(`${name}: ${error.message}\n${await output}`);
  });
  // Under a wrapper the service is the wrapper's child: the signal goes to it (strace passes on its exit code).
  const wrapped = wrap(name).length > 0;
  const servicePid = () =>
    wrapped
      ? Number(readFileSync(`/proc/${proc.pid}/task/${proc.pid}/children`, "utf8").trim().split(" ")[0])
      : proc.pid;
  return {
    url,
    pid: servicePid(),
    output: () => output,
    stop: async () => {
      if (proc.exitCode === null) process.kill(servicePid(), "SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000);
      const code = await proc.exited;
      clearTimeout(timer);
      return code;
    },
  };
}

export async function startPair(
  options: { env?: Record<string, string>; wrap?: (name: string) => string[] } = {},
): Promise<Pair> {
  const database = await openTestDatabase("deploy", { service: "entitlement" });
  const stream = uniqueName("deploy-events");
  const nats = await natsUrl();
  const env = {
    DATABASE_URL: database.db.url,
    NATS_URL: nats,
    ENTITLEMENT_AUTH_DISABLED: "true",
    ...pipelineNatsNames(stream, uniqueName("deploy-consumer")),
    ...options.env,
  };
  const wrap = options.wrap ?? (() => []);
  const started: RunningService[] = [];
  const close = async () => {
    for (const s of started) await s.stop();
    const nc = await connect({ servers: nats });
    const jsm = await jetstreamManager(nc);
    for (const name of pipelineStreams(stream)) await jsm.streams.delete(name).catch(() => false);
    await nc.close();
    await database.close();
  };
  try {
    started.push(await start("entitlement", env, wrap));
    started.push(await start("notification", env, wrap));
  } catch (error) {
    await close();
    throw error;
  }
  return { entitlement: started[0] as RunningService, notification: started[1] as RunningService, close };
}

/** POST a grant (or revoke) and return the status. */
export async function command(
  base: string,
  action: "grants" | "revokes",
  key: string,
  body: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${base}/v1/entitlements/${action}`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key, ...headers },
    body: JSON.stringify(body),
  });
}
