// The event of one applied change. The relay (outbox/) turns its payload into the protobuf message, so the payload
// carries every field of EntitlementEvent, named as in the Java original's JSON payload; `entitlement_record`, which
// every change's function calls, adds what only the database knows per item: event_id, stock_keeping_unit, source_id
// and version.
import { type ChangeAction, EVENT_TYPE } from "../../write/change-action.ts";

export function eventPayload(
  action: ChangeAction,
  change: { user_id: string; reason: string; expires_at?: string },
  traceId: string,
  now: Date,
) {
  return {
    event_type: EVENT_TYPE[action],
    occurred_at: now.toISOString(),
    user_id: change.user_id,
    source: change.reason,
    trace_id: traceId,
    // Only when set, so an event without expiry keeps the Java original's payload exactly.
    ...(change.expires_at === undefined ? {} : { expires_at: change.expires_at }),
  };
}
