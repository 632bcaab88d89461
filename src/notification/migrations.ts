import m001 from "../../db/notification/001_init.sql" with { type: "text" };
import m002 from "../../db/notification/002_nats_dlq_per_stream.sql" with { type: "text" };
import m003 from "../../db/notification/003_notification_traceparent.sql" with { type: "text" };
import m004 from "../../db/notification/004_notifications_per_event_user.sql" with { type: "text" };
import m005 from "../../db/notification/005_runtime_role.sql" with { type: "text" };
import m006 from "../../db/notification/006_drop_unused_status_indexes.sql" with { type: "text" };
import m007 from "../../db/notification/007_notifications_due_idx.sql" with { type: "text" };
import m008 from "../../db/notification/008_player_inbox.sql" with { type: "text" };
import m009 from "../../db/notification/009_webhook_endpoints.sql" with { type: "text" };
import m010 from "../../db/notification/010_seq_by_statement.sql" with { type: "text" };
import m011 from "../../db/notification/011_webhook_replayed_at.sql" with { type: "text" };
import m012 from "../../db/notification/012_webhook_older_secrets.sql" with { type: "text" };
import m013 from "../../db/notification/013_notification_requests.sql" with { type: "text" };
import m014 from "../../db/notification/014_player_devices.sql" with { type: "text" };
import m015 from "../../db/notification/015_push_deliveries.sql" with { type: "text" };
import storeNotifications from "../../db/notification/functions/store_notifications.sql" with { type: "text" };
import storeNotificationsLeased from "../../db/notification/functions/store_notifications_leased.sql" with {
  type: "text",
};
import p008 from "../../db/notification/prepare/008_player_inbox.sql" with { type: "text" };
import { migrationList, type SchemaText } from "../shared/migrate.ts";
import { functionList } from "../shared/schema-functions.ts";

export const SCHEMA = "notification";
/** Every file of db/notification/, in order (a test checks this list against the folder). */
export const migrations = migrationList(
  {
    "001_init.sql": m001,
    "002_nats_dlq_per_stream.sql": m002,
    "003_notification_traceparent.sql": m003,
    "004_notifications_per_event_user.sql": m004,
    "005_runtime_role.sql": m005,
    "006_drop_unused_status_indexes.sql": m006,
    "007_notifications_due_idx.sql": m007,
    "008_player_inbox.sql": m008,
    "009_webhook_endpoints.sql": m009,
    "010_seq_by_statement.sql": m010,
    "011_webhook_replayed_at.sql": m011,
    "012_webhook_older_secrets.sql": m012,
    "013_notification_requests.sql": m013,
    "014_player_devices.sql": m014,
    "015_push_deliveries.sql": m015,
  },
  // Numbers the stored notifications before 008 takes its lock (db/notification/prepare/).
  { "008_player_inbox.sql": p008 },
);

/**
 * Every file of db/notification/functions/, applied after the migrations (a test checks this list against the folder).
 * The triggers' functions (migrations 008, 009 and 015) stay in the migrations that create their triggers: a trigger
 * needs its function when it is created.
 */
export const functions = functionList({
  "store_notifications.sql": storeNotifications,
  "store_notifications_leased.sql": storeNotificationsLeased,
});

/** The notification schema as the migration runner applies it. */
export const schemaText: SchemaText = { migrations, functions };
