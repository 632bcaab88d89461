// The shapes of a player's devices and push preferences: one schema each for validation, types and OpenAPI.
import { type Static, Type } from "@sinclair/typebox";

/** Devices a player keeps at most: registering one more replaces the oldest. */
export const MAX_DEVICES = 10;
/** Types a player's preferences name at most. */
export const MAX_PREFERENCE_TYPES = 200;
export const MAX_ENDPOINT_LENGTH = 2048;
export const MAX_FCM_TOKEN_LENGTH = 4096;

export const Platform = Type.Union([Type.Literal("webpush"), Type.Literal("fcm")]);
export type Platform = Static<typeof Platform>;

export const WebPushDeviceBody = Type.Object(
  {
    platform: Type.Literal("webpush"),
    subscription: Type.Object(
      {
        endpoint: Type.String({
          maxLength: MAX_ENDPOINT_LENGTH,
          description: "https, on a host the service may reach",
        }),
        expirationTime: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
        keys: Type.Object({
          p256dh: Type.String({ description: "base64url: the subscription's P-256 public key (65 bytes)" }),
          auth: Type.String({ description: "base64url: the subscription's auth secret (16 bytes)" }),
        }),
      },
      { description: "What the browser's PushSubscription.toJSON() gives." },
    ),
  },
  { title: "WebPushDevice" },
);

export const FcmDeviceBody = Type.Object(
  {
    platform: Type.Literal("fcm"),
    token: Type.String({
      minLength: 1,
      maxLength: MAX_FCM_TOKEN_LENGTH,
      description: "The app's FCM registration token.",
    }),
  },
  { title: "FcmDevice" },
);

export const DeviceBody = Type.Union([WebPushDeviceBody, FcmDeviceBody], { title: "DeviceRegistration" });
export type DeviceBody = Static<typeof DeviceBody>;

export const Device = Type.Object(
  {
    device_id: Type.String({ format: "uuid" }),
    platform: Platform,
    created_at: Type.String({ description: "ISO-8601 UTC" }),
    last_success_at: Type.Union([Type.String(), Type.Null()], { description: "ISO-8601 UTC: the last push delivered" }),
  },
  { title: "Device" },
);
export type Device = Static<typeof Device>;

export const RegisteredDevice = Type.Object(
  { device_id: Type.String({ format: "uuid" }), platform: Platform, created_at: Type.String() },
  { title: "RegisteredDevice" },
);
export type RegisteredDevice = Static<typeof RegisteredDevice>;

export const DeviceList = Type.Object({ devices: Type.Array(Device) }, { title: "DeviceList" });

export const DeviceParams = Type.Object({ device_id: Type.String() });

export const Preferences = Type.Object(
  {
    push: Type.Boolean({ description: "false: no push at all" }),
    types: Type.Record(Type.String(), Type.Object({ push: Type.Boolean() }), {
      description: `Per notification type (at most ${MAX_PREFERENCE_TYPES}); a type not named follows push.`,
    }),
  },
  { title: "Preferences" },
);
export type Preferences = Static<typeof Preferences>;
