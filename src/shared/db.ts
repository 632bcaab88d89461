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
    prepare: true,
    onnotice: () => {},
    connection: { search_path: options.schema, application_name: options.applicationName },
  });
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
