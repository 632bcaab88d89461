// Every kind of due work the scheduler runs. A new kind is one file returning a DueWorkKind (kind.ts says what its
// table needs) and one line here.
import { entitlementExpiryDue } from "../expiry/due-work.ts";
import { type PointsDueSettings, pointReservationsDue } from "../points/due-work.ts";
import type { DueWorkKind } from "./kind.ts";

export type KindSettings = { points: PointsDueSettings };

export function dueWorkKinds(settings: KindSettings): DueWorkKind[] {
  return [pointReservationsDue(settings.points), entitlementExpiryDue()] as DueWorkKind[];
}
