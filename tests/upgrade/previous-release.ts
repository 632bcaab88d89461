// The previous release, 640b121, as its replicas meet this release's schema during a rolling upgrade: the schema it
// applied (its migrations, then its function files), with the texts this release changed since as that release
// shipped them (previous-release/). Its calls are in previous-calls.ts, its replies in previous-replies.ts. Nothing
// here may follow later changes of src/ or db/: it stands for code that is already deployed.
import { functions, migrations } from "../../src/entitlement/migrations.ts";
import type { SchemaText } from "../../src/shared/migrate.ts";
import { functionList } from "../../src/shared/schema-functions.ts";
import entitlementExtend from "./previous-release/functions/entitlement_extend.sql" with { type: "text" };
import entitlementExtendUndo from "./previous-release/functions/entitlement_extend_undo.sql" with { type: "text" };
import entitlementGrant from "./previous-release/functions/entitlement_grant.sql" with { type: "text" };
import entitlementRevoke from "./previous-release/functions/entitlement_revoke.sql" with { type: "text" };
import idempotencyOpen from "./previous-release/functions/idempotency_open.sql" with { type: "text" };
import idempotencyStore from "./previous-release/functions/idempotency_store.sql" with { type: "text" };
import pointCancel from "./previous-release/functions/point_cancel.sql" with { type: "text" };
import pointReserve from "./previous-release/functions/point_reserve.sql" with { type: "text" };

/** The commit of the previous release: the executables test builds it, and the vendored texts are its files. */
export const PREVIOUS_COMMIT = "640b121";

/** Its last migration: 001–017, none of which this release has changed. */
export const PREVIOUS_LAST_MIGRATION = 17;

/** Its function files, named; the texts this release changed since are the release's own (previous-release/). */
const PREVIOUS_FUNCTIONS = [
  "api_instant",
  "entitlement_change",
  "entitlement_expire",
  "entitlement_extend",
  "entitlement_extend_undo",
  "entitlement_grant",
  "entitlement_record",
  "entitlement_reply",
  "entitlement_revoke",
  "entitlement_set_expiry",
  "idempotency_answer",
  "idempotency_open",
  "idempotency_store",
  "point_cancel",
  "point_claim",
  "point_command",
  "point_execute",
  "point_fail",
  "point_requeue",
  "point_reservation_reply",
  "point_reserve",
];

/** The files of db/entitlement/ this release has changed since, relative to the repository, and their old texts. */
export const VENDORED: Record<string, string> = {
  "db/entitlement/functions/entitlement_extend.sql": entitlementExtend,
  "db/entitlement/functions/entitlement_extend_undo.sql": entitlementExtendUndo,
  "db/entitlement/functions/entitlement_grant.sql": entitlementGrant,
  "db/entitlement/functions/entitlement_revoke.sql": entitlementRevoke,
  "db/entitlement/functions/idempotency_open.sql": idempotencyOpen,
  "db/entitlement/functions/idempotency_store.sql": idempotencyStore,
  "db/entitlement/functions/point_cancel.sql": pointCancel,
  "db/entitlement/functions/point_reserve.sql": pointReserve,
};

function previousFunctionText(name: string): string {
  const text = VENDORED[`db/entitlement/functions/${name}.sql`] ?? functions.find((f) => f.name === name)?.sql;
  if (text === undefined) throw new Error(`the previous release's ${name}.sql is neither vendored nor in the tree`);
  return text;
}

/** The previous release's schema as its migration run applied it: 001–017, then its 21 functions. */
export const previousSchema: SchemaText = {
  migrations: migrations.filter((m) => m.version <= PREVIOUS_LAST_MIGRATION),
  functions: functionList(
    Object.fromEntries(PREVIOUS_FUNCTIONS.map((name) => [`${name}.sql`, previousFunctionText(name)])),
  ),
};
