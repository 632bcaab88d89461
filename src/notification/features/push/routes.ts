// /v1/me/devices and /v1/me/preferences: a player registers the devices pushes reach and chooses what is pushed, with
// the same access token as their inbox. Mounted beside the inbox routes (only when players are configured); the player
// is verified before the body is looked at, and the user id is the token's.
import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { errorSchema } from "../../../shared/http/errors.ts";
import type { Player, PlayerAuthenticator } from "../../edge/player-auth.ts";
import { DeviceBody, DeviceList, DeviceParams, Preferences, RegisteredDevice } from "./model.ts";
import {
  devicesOf,
  type PushFeatureDeps,
  preferencesOf,
  registerDevice,
  removeDevice,
  replacePreferences,
} from "./service.ts";
import { checkDeviceBody, checkPreferences } from "./validation.ts";

export type PushRouteDeps = PushFeatureDeps & { authenticate: PlayerAuthenticator };

const UNAUTHORIZED = errorSchema("UNAUTHORIZED: no valid access token (WWW-Authenticate says why)");
const TAGS = { tags: ["players"], security: [{ playerToken: [] }] };

export function pushRoutes(deps: PushRouteDeps) {
  return new Elysia({ name: "push-routes", strictPath: true })
    .derive(
      async ({ request }): Promise<{ player: Player }> => ({
        player: await deps.authenticate(request.headers.get("authorization")),
      }),
    )
    .post(
      "/v1/me/devices",
      async ({ player, body, set }) => {
        const { created, device } = await registerDevice(deps, player.userId, body);
        set.status = created ? 201 : 200;
        return device;
      },
      register(deps),
    )
    .get("/v1/me/devices", ({ player }) => devicesOf(deps, player.userId), LIST)
    .delete(
      "/v1/me/devices/:device_id",
      async ({ player, params, set }) => {
        await removeDevice(deps, player.userId, params.device_id);
        set.status = 204;
        return null;
      },
      DELETE,
    )
    .get("/v1/me/preferences", ({ player }) => preferencesOf(deps, player.userId), READ)
    .put("/v1/me/preferences", ({ player, body }) => replacePreferences(deps, player.userId, body), WRITE);
}

const register = (deps: PushRouteDeps) => ({
  parse: "json" as const,
  // Checked before the schema, so that each 400 names the field and the rule.
  transform: ({ body }: { body: unknown }) => void checkDeviceBody(body, deps.configured, deps.allowPrivate),
  body: DeviceBody,
  response: {
    200: RegisteredDevice,
    201: RegisteredDevice,
    400: errorSchema(
      "BAD_REQUEST: the body is invalid (the message names the field); PLATFORM_NOT_CONFIGURED: this service has no " +
        "keys for that platform; ENDPOINT_URL_NOT_ALLOWED: the subscription's endpoint is not https or its host may not be reached",
    ),
    401: UNAUTHORIZED,
  },
  detail: {
    operationId: "registerMyDevice",
    summary: "Register a device for push: 201 when new, 200 with the same device when registered already",
    ...TAGS,
  },
});
const LIST = {
  response: { 200: DeviceList, 401: UNAUTHORIZED },
  detail: { operationId: "listMyDevices", summary: "My devices (never their keys or tokens)", ...TAGS },
};
const DELETE = {
  params: DeviceParams,
  response: {
    204: Type.Null({ description: "Deleted, with its waiting pushes: no body." }),
    401: UNAUTHORIZED,
    404: errorSchema("NOT_FOUND: no such device of mine"),
  },
  detail: { operationId: "deleteMyDevice", summary: "Stop pushing to a device", ...TAGS },
};
const READ = {
  response: { 200: Preferences, 401: UNAUTHORIZED },
  detail: { operationId: "myPreferences", summary: "What is pushed to me: everything on until I change it", ...TAGS },
};
const WRITE = {
  parse: "json" as const,
  transform: ({ body }: { body: unknown }) => void checkPreferences(body),
  body: Preferences,
  response: { 200: Preferences, 400: errorSchema("BAD_REQUEST: the body is invalid"), 401: UNAUTHORIZED },
  detail: { operationId: "replaceMyPreferences", summary: "Replace what is pushed to me", ...TAGS },
};
