-- Players' devices (Web Push subscriptions and FCM registration tokens) and their push preferences
-- (docs/push.md). Runs with search_path = notification.

create table player_devices (
  device_id uuid primary key,
  user_id text not null,
  platform text not null check (platform in ('webpush', 'fcm')),
  -- sha256 of what names the device to its push service (the subscription's endpoint, the registration token): the
  -- same device registered again is found by it, without an index over the endpoint or token itself.
  address_hash bytea not null,
  -- Web Push: the endpoint and the subscription's keys; FCM: the registration token. Never listed nor returned.
  endpoint text,
  p256dh text,
  auth text,
  token text,
  created_at timestamptz not null,
  last_success_at timestamptz,
  -- A device belongs to one player at a time: registered by another (a shared browser, a phone signed in again), it
  -- moves to them, so the previous player's pushes stop reaching it.
  unique (platform, address_hash)
);
create index player_devices_user_idx on player_devices (user_id, created_at);

-- A player's push preferences; no row: everything on. `types` maps a notification type to {"push": bool}.
create table player_preferences (
  user_id text primary key,
  push boolean not null,
  types jsonb not null,
  updated_at timestamptz not null
);
