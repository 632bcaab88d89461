import m001 from "../../db/entitlement/001_init.sql" with { type: "text" };
import m002 from "../../db/entitlement/002_outbox_fresh_idx.sql" with { type: "text" };
import m003 from "../../db/entitlement/003_history_and_expiry.sql" with { type: "text" };
import m004 from "../../db/entitlement/004_entitlement_expiries.sql" with { type: "text" };
import m005 from "../../db/entitlement/005_outbox_traceparent.sql" with { type: "text" };
import m006 from "../../db/entitlement/006_points.sql" with { type: "text" };
import m007 from "../../db/entitlement/007_entitlement_list_keyset_idx.sql" with { type: "text" };
import m008 from "../../db/entitlement/008_runtime_role.sql" with { type: "text" };
import m009 from "../../db/entitlement/009_entitlement_command.sql" with { type: "text" };
import m010 from "../../db/entitlement/010_outbox_analyze.sql" with { type: "text" };
import m011 from "../../db/entitlement/011_history_partitions.sql" with { type: "text" };
import m012 from "../../db/entitlement/012_points_balance_cap.sql" with { type: "text" };
import m013 from "../../db/entitlement/013_one_write_path.sql" with { type: "text" };
import m014 from "../../db/entitlement/014_no_notify_on_commit.sql" with { type: "text" };
import m015 from "../../db/entitlement/015_hot_indexes.sql" with { type: "text" };
import m016 from "../../db/entitlement/016_point_execute.sql" with { type: "text" };
import m017 from "../../db/entitlement/017_audit_search.sql" with { type: "text" };
import m018 from "../../db/entitlement/018_bulk_key_scope.sql" with { type: "text" };
import m019 from "../../db/entitlement/019_audit_caller_prefix.sql" with { type: "text" };
import m020 from "../../db/entitlement/020_reply_facts.sql" with { type: "text" };
import m021 from "../../db/entitlement/021_idempotency_call.sql" with { type: "text" };
import m022 from "../../db/entitlement/022_drop_predecessor_entry_points.sql" with { type: "text" };
import m023 from "../../db/entitlement/023_one_call_per_change.sql" with { type: "text" };
import m024 from "../../db/entitlement/024_idempotency_values.sql" with { type: "text" };
import apiInstant from "../../db/entitlement/functions/api_instant.sql" with { type: "text" };
import cancelPointReservation from "../../db/entitlement/functions/cancel_point_reservation.sql" with { type: "text" };
import entitlementExpire from "../../db/entitlement/functions/entitlement_expire.sql" with { type: "text" };
import entitlementExtend from "../../db/entitlement/functions/entitlement_extend.sql" with { type: "text" };
import entitlementExtendUndo from "../../db/entitlement/functions/entitlement_extend_undo.sql" with { type: "text" };
import entitlementFacts from "../../db/entitlement/functions/entitlement_facts.sql" with { type: "text" };
import entitlementGrant from "../../db/entitlement/functions/entitlement_grant.sql" with { type: "text" };
import entitlementPreviousReply from "../../db/entitlement/functions/entitlement_previous_reply.sql" with {
  type: "text",
};
import entitlementRecord from "../../db/entitlement/functions/entitlement_record.sql" with { type: "text" };
import entitlementReply from "../../db/entitlement/functions/entitlement_reply.sql" with { type: "text" };
import entitlementRevoke from "../../db/entitlement/functions/entitlement_revoke.sql" with { type: "text" };
import entitlementSetExpiry from "../../db/entitlement/functions/entitlement_set_expiry.sql" with { type: "text" };
import entitlementStatusChange from "../../db/entitlement/functions/entitlement_status_change.sql" with {
  type: "text",
};
import extendEntitlement from "../../db/entitlement/functions/extend_entitlement.sql" with { type: "text" };
import idempotencyAnswer from "../../db/entitlement/functions/idempotency_answer.sql" with { type: "text" };
import idempotencyKeep from "../../db/entitlement/functions/idempotency_keep.sql" with { type: "text" };
import idempotencyLookup from "../../db/entitlement/functions/idempotency_lookup.sql" with { type: "text" };
import idempotencyOpen from "../../db/entitlement/functions/idempotency_open.sql" with { type: "text" };
import idempotencyRemember from "../../db/entitlement/functions/idempotency_remember.sql" with { type: "text" };
import idempotencyStore from "../../db/entitlement/functions/idempotency_store.sql" with { type: "text" };
import idempotencyStored from "../../db/entitlement/functions/idempotency_stored.sql" with { type: "text" };
import pointCancel from "../../db/entitlement/functions/point_cancel.sql" with { type: "text" };
import pointClaim from "../../db/entitlement/functions/point_claim.sql" with { type: "text" };
import pointExecute from "../../db/entitlement/functions/point_execute.sql" with { type: "text" };
import pointFail from "../../db/entitlement/functions/point_fail.sql" with { type: "text" };
import pointPreviousReply from "../../db/entitlement/functions/point_previous_reply.sql" with { type: "text" };
import pointRecorded from "../../db/entitlement/functions/point_recorded.sql" with { type: "text" };
import pointRequeue from "../../db/entitlement/functions/point_requeue.sql" with { type: "text" };
import pointReservationFacts from "../../db/entitlement/functions/point_reservation_facts.sql" with { type: "text" };
import pointReservationReply from "../../db/entitlement/functions/point_reservation_reply.sql" with { type: "text" };
import pointReserve from "../../db/entitlement/functions/point_reserve.sql" with { type: "text" };
import reservePoints from "../../db/entitlement/functions/reserve_points.sql" with { type: "text" };
import undoExtension from "../../db/entitlement/functions/undo_extension.sql" with { type: "text" };
import p011 from "../../db/entitlement/prepare/011_history_partitions.sql" with { type: "text" };
import { migrationList, type SchemaText } from "../shared/migrate.ts";
import { functionList } from "../shared/schema-functions.ts";

export const SCHEMA = "entitlement";
/** Every file of db/entitlement/, in order (a test checks this list against the folder). */
export const migrations = migrationList(
  {
    "001_init.sql": m001,
    "002_outbox_fresh_idx.sql": m002,
    "003_history_and_expiry.sql": m003,
    "004_entitlement_expiries.sql": m004,
    "005_outbox_traceparent.sql": m005,
    "006_points.sql": m006,
    "007_entitlement_list_keyset_idx.sql": m007,
    "008_runtime_role.sql": m008,
    "009_entitlement_command.sql": m009,
    "010_outbox_analyze.sql": m010,
    "011_history_partitions.sql": m011,
    "012_points_balance_cap.sql": m012,
    "013_one_write_path.sql": m013,
    "014_no_notify_on_commit.sql": m014,
    "015_hot_indexes.sql": m015,
    "016_point_execute.sql": m016,
    "017_audit_search.sql": m017,
    "018_bulk_key_scope.sql": m018,
    "019_audit_caller_prefix.sql": m019,
    "020_reply_facts.sql": m020,
    "021_idempotency_call.sql": m021,
    "022_drop_predecessor_entry_points.sql": m022,
    "023_one_call_per_change.sql": m023,
    "024_idempotency_values.sql": m024,
  },
  {
    // Proves the history tables' rows in bounds before 011 takes its lock (db/entitlement/prepare/).
    "011_history_partitions.sql": p011,
  },
);

/** Every file of db/entitlement/functions/, applied after the migrations (a test checks this list against the folder). */
export const functions = functionList({
  "api_instant.sql": apiInstant,
  "entitlement_expire.sql": entitlementExpire,
  "entitlement_extend.sql": entitlementExtend,
  "entitlement_extend_undo.sql": entitlementExtendUndo,
  "entitlement_grant.sql": entitlementGrant,
  "entitlement_record.sql": entitlementRecord,
  "entitlement_reply.sql": entitlementReply,
  "entitlement_revoke.sql": entitlementRevoke,
  "entitlement_set_expiry.sql": entitlementSetExpiry,
  "idempotency_answer.sql": idempotencyAnswer,
  "idempotency_open.sql": idempotencyOpen,
  "idempotency_store.sql": idempotencyStore,
  "point_cancel.sql": pointCancel,
  "point_claim.sql": pointClaim,
  "point_execute.sql": pointExecute,
  "point_fail.sql": pointFail,
  "point_requeue.sql": pointRequeue,
  "point_reservation_reply.sql": pointReservationReply,
  "point_reserve.sql": pointReserve,
  "idempotency_keep.sql": idempotencyKeep,
  "idempotency_lookup.sql": idempotencyLookup,
  "idempotency_remember.sql": idempotencyRemember,
  "idempotency_stored.sql": idempotencyStored,
  "reserve_points.sql": reservePoints,
  "cancel_point_reservation.sql": cancelPointReservation,
  "point_previous_reply.sql": pointPreviousReply,
  "point_reservation_facts.sql": pointReservationFacts,
  "point_recorded.sql": pointRecorded,
  "entitlement_facts.sql": entitlementFacts,
  "entitlement_previous_reply.sql": entitlementPreviousReply,
  "entitlement_status_change.sql": entitlementStatusChange,
  "extend_entitlement.sql": extendEntitlement,
  "undo_extension.sql": undoExtension,
});

/** The entitlement schema as the migration runner applies it. */
export const schemaText: SchemaText = { migrations, functions };
