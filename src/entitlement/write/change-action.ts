// Every change of entitlement state that publishes an event, and the event each publishes: the commands, an
// extension and the scheduler's expiry each write through the function of their action (entitlement-*.ts).
export type ChangeAction = "GRANT" | "REVOKE" | "EXTEND" | "EXPIRE";

export const EVENT_TYPE: Record<ChangeAction, string> = {
  GRANT: "EntitlementGranted",
  REVOKE: "EntitlementRevoked",
  EXTEND: "EntitlementExtended",
  EXPIRE: "EntitlementRevoked",
};
