// The previous release, as its replicas meet this release's schema during a rolling upgrade: the schema it applied
// (its migrations, then its function files) and the services, write path and scheduler calls it runs, all its own
// code imported from git (previous-source.ts). Nothing here may follow later changes of src/ or db/: it stands for
// code that is already deployed.
import type { Sql } from "../../src/shared/db.ts";
import type { SchemaText } from "../../src/shared/migrate.ts";
import type { Services } from "./answers.ts";
import { PREVIOUS_COMMIT, previousModule } from "./previous-source.ts";

export { PREVIOUS_COMMIT };

/** The previous release's schema as its migration run applied it. */
export const previousSchema: SchemaText = (
  await previousModule<{ schemaText: SchemaText }>("src/entitlement/migrations.ts")
).schemaText;

/** Its last migration: this release's later ones are the upgrade. */
export const PREVIOUS_LAST_MIGRATION = Math.max(...previousSchema.migrations.map((m) => m.version));

type Call<R = unknown> = (db: Sql, args: object) => Promise<R>;

/**
 * What the tests run of the previous release: its services as its routes call them (typed as this release's: the old
 * source is not type-checked), the console's undo of an extension, and its scheduler's and operator's calls.
 */
export type PreviousRelease = Services & {
  undoExtension: Call;
  expireEntitlement: Call<string>;
  claimDueReservations: Call<unknown[]>;
  executeReservation: Call;
  failReservation: Call;
  requeueReservations: Call;
};

/** Where each is in the previous release's src/entitlement/. */
const SOURCE: Record<keyof PreviousRelease, string> = {
  executeCommand: "features/entitlements/service.ts",
  executeBundle: "features/bundles/service.ts",
  executeExtension: "features/extensions/service.ts",
  createReservation: "features/points/service.ts",
  cancelReservation: "features/points/service.ts",
  ApiError: "../shared/http/errors.ts",
  undoExtension: "write/entitlement-extend-undo.ts",
  expireEntitlement: "write/entitlement-expire.ts",
  claimDueReservations: "write/point-claim.ts",
  executeReservation: "write/point-execute.ts",
  failReservation: "write/point-fail.ts",
  requeueReservations: "write/point-requeue.ts",
};

async function load(name: keyof PreviousRelease): Promise<[string, unknown]> {
  const module = await previousModule<Record<string, unknown>>(`src/entitlement/${SOURCE[name]}`);
  if (module[name] === undefined) throw new Error(`${PREVIOUS_COMMIT}'s ${SOURCE[name]} has no ${name}`);
  return [name, module[name]];
}

export const previousRelease = Object.fromEntries(
  await Promise.all(Object.keys(SOURCE).map((name) => load(name as keyof PreviousRelease))),
) as PreviousRelease;
