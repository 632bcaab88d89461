// A player's devices and preferences: register (the same device again is found, an eleventh replaces the oldest),
// list, delete; read and replace preferences. The user id always comes from the player's token.
import { randomUUID } from "node:crypto";
import type { Sql } from "../../../shared/db.ts";
import { ApiError } from "../../../shared/http/errors.ts";
import { isUuid } from "../../../shared/ids.ts";
import type { Clock } from "../../../shared/runtime.ts";
import { allowedAddresses, type Resolve } from "../endpoints/url-guard.ts";
import type { Device, Platform, Preferences, RegisteredDevice } from "./model.ts";
import {
  type DeviceRow,
  deleteDevice,
  listDevices,
  lockDevices,
  readPreferences,
  releaseDevice,
  trimDevices,
  upsertDevice,
  writePreferences,
} from "./queries.ts";
import { checkDeviceBody, checkPreferences, parseSubscriptionEndpoint } from "./validation.ts";

export type PushFeatureDeps = {
  sql: Sql;
  now: Clock;
  /** The platforms this service can push to (their keys or service account are configured). */
  configured: Record<Platform, boolean>;
  allowPrivate: boolean;
  resolve?: Resolve;
};

const EVERYTHING_ON: Preferences = { push: true, types: {} };

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

const toDevice = (r: DeviceRow): Device => ({
  device_id: r.device_id,
  platform: r.platform,
  created_at: r.created_at.toISOString(),
  last_success_at: iso(r.last_success_at),
});

/** Registers a device; `created` false when the player already had it (the same subscription or token). */
export async function registerDevice(
  deps: PushFeatureDeps,
  userId: string,
  body: unknown,
): Promise<{ created: boolean; device: RegisteredDevice }> {
  const device = checkDeviceBody(body, deps.configured, deps.allowPrivate);
  if (device.platform === "webpush") {
    // The host's addresses checked now as well as at each push: a subscription that can never be pushed is refused.
    const url = parseSubscriptionEndpoint(device.endpoint, deps.allowPrivate);
    await allowedAddresses(url, { allowPrivate: deps.allowPrivate, resolve: deps.resolve });
  }
  const row = await deps.sql.begin(async (tx) => {
    await lockDevices(tx, userId);
    await releaseDevice(tx, { userId, device });
    const stored = await upsertDevice(tx, { deviceId: randomUUID(), userId, device, now: deps.now() });
    if (stored.created) await trimDevices(tx, userId);
    return stored;
  });
  return {
    created: row.created,
    device: { device_id: row.device_id, platform: row.platform, created_at: row.created_at.toISOString() },
  };
}

export async function devicesOf(deps: PushFeatureDeps, userId: string) {
  return { devices: (await listDevices(deps.sql, userId)).map(toDevice) };
}

export async function removeDevice(deps: PushFeatureDeps, userId: string, deviceId: string): Promise<void> {
  // Another player's device is not found either: whose devices exist is not told.
  if (!isUuid(deviceId) || !(await deleteDevice(deps.sql, { userId, deviceId }))) {
    throw new ApiError(404, "NOT_FOUND", "no such device");
  }
}

export async function preferencesOf(deps: PushFeatureDeps, userId: string): Promise<Preferences> {
  return (await readPreferences(deps.sql, userId)) ?? EVERYTHING_ON;
}

export async function replacePreferences(deps: PushFeatureDeps, userId: string, body: unknown): Promise<Preferences> {
  const preferences = checkPreferences(body);
  await writePreferences(deps.sql, { userId, preferences, now: deps.now() });
  return preferences;
}
