// What `bun run stack` keeps between runs, all of it its own: one database on the PostgreSQL it uses and one set of
// stream names on the NATS it uses, never the server's `postgres` database nor the services' default streams, so a
// stack and anything else on the same servers (tests, another checkout) never meet. `--reset` drops both.
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import postgres from "postgres";
import { pipelineNatsNames, pipelineStreams } from "./infra/nats-names.ts";

export type StackNames = { database: string; natsPrefix: string };

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
const STREAM_PREFIX = /^[A-Za-z0-9_-]{1,32}$/;

/** STACK_DATABASE and STACK_NATS_PREFIX override the defaults (tests run a stack beside another one). */
export function stackNames(env: Record<string, string | undefined> = process.env): StackNames {
  const database = env.STACK_DATABASE || "entitlement_stack";
  const natsPrefix = env.STACK_NATS_PREFIX || "stack";
  if (!IDENTIFIER.test(database)) throw new Error(`STACK_DATABASE '${database}' must match ${IDENTIFIER}`);
  if (!STREAM_PREFIX.test(natsPrefix)) throw new Error(`STACK_NATS_PREFIX '${natsPrefix}' must match ${STREAM_PREFIX}`);
  return { database, natsPrefix };
}

/** The environment that points both services at the stack's streams, subjects and durables. */
export const stackNatsEnv = (names: StackNames): Record<string, string> =>
  pipelineNatsNames(`${names.natsPrefix}-events`, `${names.natsPrefix}-notification`);

/** The same server as `serverUrl`, the stack's database. */
export function stackDatabaseUrl(serverUrl: string, names: StackNames): string {
  const url = new URL(serverUrl);
  url.pathname = `/${names.database}`;
  return url.toString();
}

/** Creates the stack's database on the server of `serverUrl` unless it exists; true when it was created. */
export async function ensureDatabase(serverUrl: string, names: StackNames): Promise<boolean> {
  const sql = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    const [found] = await sql`select 1 from pg_database where datname = ${names.database}`;
    if (found) return false;
    await sql`create database ${sql(names.database)}`;
    return true;
  } finally {
    await sql.end();
  }
}

/** Drops the stack's database, even with sessions left in it; its name when there was one. */
export async function dropDatabase(serverUrl: string, names: StackNames): Promise<string[]> {
  const sql = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    const [found] = await sql`select 1 from pg_database where datname = ${names.database}`;
    if (!found) return [];
    await sql`drop database ${sql(names.database)} with (force)`;
    return [`database ${names.database}`];
  } finally {
    await sql.end();
  }
}

/** Deletes the stack's streams (their messages and consumers); the names of those there were. */
export async function deleteStreams(natsUrl: string, names: StackNames): Promise<string[]> {
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await jetstreamManager(nc);
    const removed: string[] = [];
    for (const stream of pipelineStreams(`${names.natsPrefix}-events`)) {
      if (await jsm.streams.delete(stream).catch(() => false)) removed.push(`stream ${stream}`);
    }
    return removed;
  } finally {
    await nc.close();
  }
}
