// PostgreSQL access with postgres.js. Each service works inside its own schema, set as the connection's search_path,
// so SQL uses unqualified table names.
import postgres from "postgres";

export type Sql = postgres.Sql;
/** A handle that runs queries: the pool or a transaction. Query functions take it first (STYLE §4). */
export type Db = postgres.Sql | postgres.TransactionSql;

export function createSql(options: { url: string; schema: string; max: number; applicationName: string }): Sql {
  return postgres(options.url, {
    max: options.max,
    idle_timeout: 30,
    connect_timeout: 10,
    backoff: reconnectDelaySeconds,
    prepare: true,
    onnotice: () => {},
    connection: { search_path: options.schema, application_name: options.applicationName },
  });
}

/**
 * Seconds a pooled connection waits before it reconnects after a failure. postgres.js's default grows with every failure
 * of any connection of the pool, up to 20s, and a connection keeps the delay it got when it closed: after a PostgreSQL
 * restart a request could wait 8s for a connection although the server had been back for seconds (measured by the
 * fault drill, `bun run drill`). Capped at 1s, with jitter: a few connection attempts a second per pool slot while the database is away.
 */
export function reconnectDelaySeconds(retries: number, random: () => number = Math.random): number {
  return (0.5 + random() / 2) * Math.min(0.05 * 2 ** retries, 1);
}

/** SQLSTATE codes the code reacts to, in one named table (STYLE §8). */
export const SqlState = {
  uniqueViolation: "23505",
  serializationFailure: "40001",
  deadlockDetected: "40P01",
  adminShutdown: "57P01",
  crashShutdown: "57P02",
  cannotConnectNow: "57P03",
  connectionException: "08000",
  connectionFailure: "08006",
  queryCanceled: "57014",
} as const;

const TRANSIENT = new Set<string>([
  SqlState.serializationFailure,
  SqlState.deadlockDetected,
  SqlState.adminShutdown,
  SqlState.crashShutdown,
  SqlState.cannotConnectNow,
  SqlState.connectionException,
  SqlState.connectionFailure,
]);

/** True for errors worth retrying later: lost connections, restarts, serialization failures. */
export function isTransientDbError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: string }).code;
  if (code && TRANSIENT.has(code)) return true;
  return /ECONNREFUSED|ECONNRESET|CONNECTION_CLOSED|CONNECTION_ENDED|CONNECTION_DESTROYED|CONNECT_TIMEOUT/.test(
    code ?? error.message,
  );
}

/** `select 1`, for readiness. */
export async function ping(sql: Sql): Promise<void> {
  await sql`select 1`;
}
