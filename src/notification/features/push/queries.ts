// SQL of a player's devices and preferences, one statement per function, handle first. Endpoints, keys and tokens are
// written here and read only by the push worker: nothing here returns them.
import { createHash } from "node:crypto";
import type { Db } from "../../../shared/db.ts";
import { MAX_DEVICES, type Platform, type Preferences } from "./model.ts";
import type { NewDevice } from "./validation.ts";

export type DeviceRow = { device_id: string; platform: Platform; created_at: Date; last_success_at: Date | null };

/** What identifies a device to its push service, hashed: the key that makes the same device registered twice one. */
export const addressHash = (device: NewDevice) =>
  createHash("sha256")
    .update(device.platform === "webpush" ? device.endpoint : device.token)
    .digest();

/**
 * Registers the device for the player, or finds it: the same endpoint or token again is the same device (its keys
 * refreshed), one the player did not have is new (registerDevice releases another player's row first). `created`
 * tells which.
 */
export async function upsertDevice(
  db: Db,
  input: { deviceId: string; userId: string; device: NewDevice; now: Date },
): Promise<DeviceRow & { created: boolean }> {
  const d = input.device;
  const web = d.platform === "webpush" ? d : undefined;
  const [row] = await db<(DeviceRow & { created: boolean })[]>`
    insert into player_devices
      (device_id, user_id, platform, address_hash, endpoint, p256dh, auth, token, created_at)
    values (${input.deviceId}, ${input.userId}, ${d.platform}, ${addressHash(d)}, ${web?.endpoint ?? null},
            ${web?.p256dh ?? null}, ${web?.auth ?? null}, ${d.platform === "fcm" ? d.token : null}, ${input.now})
    on conflict (platform, address_hash) do update
    set p256dh = excluded.p256dh, auth = excluded.auth,
        device_id = case when player_devices.user_id = excluded.user_id then player_devices.device_id else excluded.device_id end,
        created_at = case when player_devices.user_id = excluded.user_id then player_devices.created_at else excluded.created_at end,
        last_success_at = case when player_devices.user_id = excluded.user_id then player_devices.last_success_at end,
        user_id = excluded.user_id
    returning device_id, platform, created_at, last_success_at, device_id = ${input.deviceId} as created`;
  return row as DeviceRow & { created: boolean };
}

/**
 * Deletes the device when another player registered it (a shared browser, a phone signed in again): it moves to the
 * new player as a new device, and the previous player's pushes still waiting for it go with the old row. Changing the
 * row's id in place instead would break the pending pushes' reference to it.
 */
export async function releaseDevice(db: Db, input: { userId: string; device: NewDevice }): Promise<void> {
  await db`
    delete from player_devices
    where platform = ${input.device.platform} and address_hash = ${addressHash(input.device)}
      and user_id <> ${input.userId}`;
}

/** Locks the player's devices, so two registrations at once count each other before trimming. */
export async function lockDevices(db: Db, userId: string): Promise<void> {
  await db`select device_id from player_devices where user_id = ${userId} for update`;
}

/** Deletes the player's oldest devices beyond MAX_DEVICES. */
export async function trimDevices(db: Db, userId: string): Promise<void> {
  await db`
    delete from player_devices where device_id in (
      select device_id from player_devices where user_id = ${userId}
      order by created_at desc, device_id desc offset ${MAX_DEVICES})`;
}

export async function listDevices(db: Db, userId: string): Promise<DeviceRow[]> {
  return db<DeviceRow[]>`
    select device_id, platform, created_at, last_success_at from player_devices
    where user_id = ${userId} order by created_at desc, device_id desc`;
}

/** True when the player had that device. */
export async function deleteDevice(db: Db, input: { userId: string; deviceId: string }): Promise<boolean> {
  const rows = await db`
    delete from player_devices where device_id = ${input.deviceId} and user_id = ${input.userId} returning 1`;
  return rows.length > 0;
}

export async function readPreferences(db: Db, userId: string): Promise<Preferences | undefined> {
  const [row] = await db<{ push: boolean; types: Preferences["types"] }[]>`
    select push, types from player_preferences where user_id = ${userId}`;
  return row && { push: row.push, types: row.types };
}

export async function writePreferences(db: Db, input: { userId: string; preferences: Preferences; now: Date }) {
  const p = input.preferences;
  await db`
    insert into player_preferences (user_id, push, types, updated_at)
    values (${input.userId}, ${p.push}, ${db.json(p.types)}, ${input.now})
    on conflict (user_id) do update set push = excluded.push, types = excluded.types, updated_at = excluded.updated_at`;
}
