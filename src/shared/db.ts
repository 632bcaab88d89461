// PostgreSQL access with postgres.js. Each service works inside its own schema, set as the connection's search_path,
// so SQL uses unqualified table names.
import postgres from "postgres";
import { DatabaseTlsError, postgresTls } from "./database-tls.ts";

export type Sql = postgres.Sql;
/** A handle that runs queries: the pool or a transaction. Query functions take it first. */
export type Db = postgres.Sql | postgres.TransactionSql;

/**
 * A query written like a tagged template but sent as an unnamed statement, so PostgreSQL plans it at every execution
 * with its values. A prepared statement gets a generic plan after five runs and keeps it until the table is analyzed:
 * one made while a queue table was nearly empty (seq scans) went on scanning the whole table per statement as it grew
 * (with autovacuum off or behind, for ever). For batched statements of hot queues the planning costs little per row.
 */
export function unprepared<T extends object[]>(db: Db) {
  return (strings: TemplateStringsArray, ...values: unknown[]): Promise<T> => {
    const text = strings.reduce((sql, part, i) => `${sql}$${i}${part}`);
    return db.unsafe<T>(text, values as postgres.ParameterOrJSON<never>[], { prepare: false });
  };
}

/** `url` may carry libpq's TLS parameters (sslmode, sslrootcert, sslcert, sslkey): see database-tls.ts. */
export function createSql(options: { url: string; schema: string; max: number; applicationName: string }): Sql {
  const { url, ssl } = postgresTls(options.url);
  return postgres(url, {
    ssl,
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
 * Seconds a pooled connection waits before it reconnects after a failure. postgres.js's default grows with every
 * failure of any connection of the pool, up to 20s, and a connection keeps the delay it got when it closed: after a
 * PostgreSQL restart a request waited seconds for a connection although the server was back (the fault drill,
 * docs/benchmarks.md). Capped at 1s, with jitter: a few connection attempts a second per pool slot while the database
 * is away.
 */
export function reconnectDelaySeconds(retries: number, random: () => number = Math.random): number {
  return (0.5 + random() / 2) * Math.min(0.05 * 2 ** retries, 1);
}

/**
 * Why createSql cannot use `url`, or undefined when it can: its TLS parameters (the files they name are read), then
 * postgres.js's own parsing. postgres.js's refusal is a TypeError that quotes the whole input, password included, so
 * configuration checks this first and reports the variable without its value. Building the client connects to nothing.
 */
export function databaseUrlProblem(url: string): string | undefined {
  try {
    void postgres(postgresTls(url).url, { max: 1, onnotice: () => {} }).end({ timeout: 0 });
    return undefined;
  } catch (error) {
    if (error instanceof DatabaseTlsError) return error.message;
    return "expected a PostgreSQL URL such as postgres://user:password@host:5432/database (host:port pairs may be comma-separated)";
  }
}

/** SQLSTATE codes the code reacts to, in one named table, never as bare literals. */
export const SqlState = {
  uniqueViolation: "23505",
  undefinedTable: "42P01",
  serializationFailure: "40001",
  deadlockDetected: "40P01",
  adminShutdown: "57P01",
  crashShutdown: "57P02",
  cannotConnectNow: "57P03",
  connectionException: "08000",
  connectionDoesNotExist: "08003",
  connectionFailure: "08006",
  unableToConnect: "08001",
  connectionRejected: "08004",
  insufficientResources: "53000",
  diskFull: "53100",
  outOfMemory: "53200",
  tooManyConnections: "53300",
  queryCanceled: "57014",
  lockNotAvailable: "55P03",
  invalidAuthorizationSpecification: "28000",
  invalidPassword: "28P01",
} as const;

/**
 * Codes of a TLS handshake with the database that failed, in one named table: the server's certificate does not verify
 * against sslrootcert or does not name the host (after a rotation to a certificate of another CA, an expiry), or the
 * server refused the client's certificate (an alert). Node's names, which Bun's errors carry as `code` too.
 */
export const TlsFailure = [
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_SIGNATURE_FAILURE",
  "CERT_REVOKED",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "INVALID_CA",
  "INVALID_PURPOSE",
  "CERT_CHAIN_TOO_LONG",
  "HOSTNAME_MISMATCH",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "ERR_SSL_WRONG_VERSION_NUMBER",
  "TLSV1_ALERT_UNKNOWN_CA",
  "ERR_SSL_TLSV1_ALERT_UNKNOWN_CA",
  "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE",
  "ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED",
  "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED",
] as const;

/**
 * The database cannot serve now, whatever the statement: it is restarting, refuses or lost the connection, is out of a
 * resource (class 53; 53300 is the server's or a role's connection limit), or refuses this login (class 28: a password
 * rotated in the wrong order, a pg_hba.conf line gone; a login is all a connection attempt does with the credentials).
 * Such a failure is a 503 and makes the service not ready, never a 500: nothing the request sent is to blame.
 */
const UNAVAILABLE = new Set<string>([
  SqlState.adminShutdown,
  SqlState.crashShutdown,
  SqlState.cannotConnectNow,
  SqlState.connectionException,
  SqlState.connectionDoesNotExist,
  SqlState.connectionFailure,
  SqlState.unableToConnect,
  SqlState.connectionRejected,
  SqlState.insufficientResources,
  SqlState.diskFull,
  SqlState.outOfMemory,
  SqlState.tooManyConnections,
  SqlState.invalidAuthorizationSpecification,
  SqlState.invalidPassword,
  ...TlsFailure,
]);

/** True when the database as a whole is unavailable (see UNAVAILABLE), including lost or refused sockets and TLS failures. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: string }).code;
  if (code && UNAVAILABLE.has(code)) return true;
  return /ECONNREFUSED|ECONNRESET|CONNECTION_CLOSED|CONNECTION_ENDED|CONNECTION_DESTROYED|CONNECT_TIMEOUT/.test(
    code ?? error.message,
  );
}

/** Unavailable because of who is asking, which waiting does not change: a refused login or a TLS handshake that failed. */
const REFUSES_THIS_CLIENT = new Set<string>([
  SqlState.invalidAuthorizationSpecification,
  SqlState.invalidPassword,
  ...TlsFailure,
]);

/**
 * Unavailable for a reason that can end by itself (isDatabaseUnavailable, less a refused login or certificate): the
 * server starting, shutting down or recovering, a socket refused or lost, out of connections or another resource.
 */
export function isDatabaseNotUpYet(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return isDatabaseUnavailable(error) && !(typeof code === "string" && REFUSES_THIS_CLIENT.has(code));
}

/** True for errors worth retrying later: an unavailable database, serialization failures and deadlocks. */
export function isTransientDbError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return code === SqlState.serializationFailure || code === SqlState.deadlockDetected || isDatabaseUnavailable(error);
}

/**
 * SQLSTATE classes that blame the data, not the database: 22 (data exception: an out-of-range value, bad encoding),
 * 23 (integrity constraint violation) and 54 (program limit exceeded: an index row too large). The same statement with
 * other data may succeed, so a batch that fails this way is worth splitting; a retry of the same data never helps.
 */
export function isDataError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code === "string" && /^(22|23|54)[0-9A-Z]{3}$/.test(code);
}

/** `select 1`, for readiness. */
export async function ping(sql: Sql): Promise<void> {
  await sql`select 1`;
}
