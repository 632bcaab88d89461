// What `bun run stack` prints: its --help, and the summary once both services are ready (URLs, tokens, the settings
// it passed through from the environment, ready-to-paste commands for one demo user, the operator commands' database).
import { positionals, quoted, splitFlags, UsageError } from "../src/shared/cli-args.ts";
import { parseDuration } from "../src/shared/config.ts";

export const HELP = `usage: bun run stack [--player-token-ttl DURATION] [--reset | --help]

Brings Entitlement and Notification up on this machine (ports 8080 and 8081, or free ones), each with a fresh API token
and debug-inbox token, and prints ready-to-paste commands and every setting it gives the services (your own value wins
where it can; each line says). Ctrl-C stops everything it started.

  --player-token-ttl DURATION  the lifetime of the printed PLAYER_TOKEN (default 12h): 30s, 5m, 2h; 0 or a negative
                               one (-1m) makes a token that is already expired, so a client's expiry path can be tried
                               (the services accept a token for 30 s past its expiry: clock tolerance)
  --reset                      drop the stack's database and streams (or the .data/ servers it started) and exit
  --help                       print this and exit

environment:
  DATABASE_URL, NATS_URL            the servers to use (default postgres://postgres@127.0.0.1:5432/postgres and
                                    nats://127.0.0.1:4222); when nothing answers there, the machine's own binaries
                                    are started with their data in .data/ (STACK_DATA_DIR names another folder)
  STACK_DATABASE, STACK_NATS_PREFIX the stack's database (entitlement_stack) and stream prefix (stack)
  ENTITLEMENT_*, NOTIFICATION_*     passed to the services as they are (docs/configuration.md), and shown once up:
                                    e.g. ENTITLEMENT_CONSOLE_ENABLED=true, NOTIFICATION_DELIVERY_CHANNEL=webhook`;

/** The printed player token's lifetime when --player-token-ttl is not given: a working day of trying things. */
export const DEFAULT_PLAYER_TOKEN_TTL_MS = 12 * 3_600_000;

export type StackOptions = { help: boolean; reset: boolean; playerTokenTtlMs: number };

/** The stack's arguments; a UsageError says what was wrong. */
export function parseStackArgs(args: string[]): StackOptions {
  const help = args.includes("--help") || args.includes("-h");
  const spec = { "--reset": "switch", "--help": "switch", "-h": "switch", "--player-token-ttl": "value" } as const;
  const { positional, flags } = splitFlags(args, spec);
  positionals(positional, []);
  const ttl = flags["--player-token-ttl"];
  const playerTokenTtlMs = ttl === undefined ? DEFAULT_PLAYER_TOKEN_TTL_MS : playerTokenTtl(ttl);
  return { help, reset: flags["--reset"] === true, playerTokenTtlMs };
}

/** `30s`, `5m`, `2h`, `0`, `-1m`: a duration, negative for a token that expired that long ago. */
function playerTokenTtl(text: string): number {
  const negative = text.startsWith("-");
  const ms = parseDuration(negative ? text.slice(1) : text);
  if (ms === undefined) {
    throw new UsageError(`--player-token-ttl ${quoted(text)} is not a duration (30s, 5m, 2h, 0 or negative: -1m)`);
  }
  return negative ? -ms : ms;
}

export function redact(url: string): string {
  const u = new URL(url.split(",")[0] as string);
  if (u.password) u.password = "***";
  return u.toString();
}

/** A value that is a URL with a password, with the password hidden; any other value as it is. */
function withoutPassword(value: string): string {
  try {
    return new URL(value).password ? redact(value) : value;
  } catch {
    return value;
  }
}

const SECRET_NAME = /SECRET|TOKEN|PASSWORD|KEY|CREDENTIALS/;
const isOn = (value: string | undefined) => /^(true|1)$/i.test(value ?? "");

/** The services' settings that come from the environment rather than from the stack, secrets hidden. */
export function passedThrough(env: Record<string, string | undefined>, setByStack: Set<string>): string[] {
  return Object.entries(env)
    .filter(
      ([name, value]) => /^(ENTITLEMENT|NOTIFICATION)_/.test(name) && value !== undefined && !setByStack.has(name),
    )
    .map(([name, value]) => `${name}=${SECRET_NAME.test(name) ? "***" : withoutPassword(value as string)}`)
    .sort();
}

export type Summary = {
  entitlement: string;
  notification: string;
  logs: { entitlement: string; notification: string };
  tokens: { api: string; admin: string; notify: string; debug: string; player: string };
  /** When PLAYER_TOKEN expires (--player-token-ttl). */
  player: { expiresAt: Date };
  /** This run's demo user, the run's id that names its purchase and idempotency key, the demo webhook receiver. */
  demo: { run: string; user: string; webhookUrl: string; page: string; vapidPublicKey: string | undefined };
  names: { database: string; natsPrefix: string };
  databaseUrl: string;
  env: Record<string, string | undefined>;
  setByStack: Set<string>;
};

/** The console and delivery lines: what the settings passed through switched on. */
function extras(s: Summary): string[] {
  const lines: string[] = [];
  if (isOn(s.env.ENTITLEMENT_CONSOLE_ENABLED)) {
    lines.push(`  console       ${s.entitlement}/console  (sign in with the API token)`);
  }
  if (isOn(s.env.NOTIFICATION_CONSOLE_ENABLED)) {
    lines.push(`  console       ${s.notification}/console  (sign in with the debug token)`);
  }
  const channel = s.env.NOTIFICATION_DELIVERY_CHANNEL || "log";
  const target =
    channel === "webhook"
      ? ` to ${withoutPassword(s.env.NOTIFICATION_WEBHOOK_URL ?? "(NOTIFICATION_WEBHOOK_URL unset)")}`
      : "";
  lines.push(`  delivery      ${channel}${target}`);
  const given = passedThrough(s.env, s.setByStack);
  if (given.length > 0) lines.push(`  from your environment: ${given.join(" ")}`);
  return lines;
}

/** The push page's line: the VAPID public key it subscribes with (public: browsers are given it), or why push is off. */
function pushLine(s: Summary): string {
  const key = s.demo.vapidPublicKey;
  if (!key) return "  push page     off: NOTIFICATION_WEBPUSH_VAPID_PUBLIC_KEY is not set";
  return `  push page     ${s.demo.page}/push.html  (docs/examples/push.html: Web Push with VAPID public key ${key})`;
}

/** `expires 2026-11-29T17:00:00.000Z`, or that it already has: the services refuse it. */
function playerExpiry(expiresAt: Date): string {
  const at = expiresAt.toISOString();
  return expiresAt.getTime() <= Date.now()
    ? `expired at ${at}: refused, to try a client's expiry path`
    : `expires ${at}`;
}

export function summary(s: Summary): string {
  // The demo user is USER_ID of the export line and the player of PLAYER_TOKEN; the printed grant's SKU is not one
  // docs/api.md's examples grant, so they still run after it.
  const { run, user } = s.demo;
  const api = `-H 'Authorization: Bearer ${s.tokens.api}'`;
  const debug = `-H 'Authorization: Bearer ${s.tokens.debug}'`;
  const database = redact(s.databaseUrl);
  const passwordNote = database === s.databaseUrl ? "" : " (*** stands for your DATABASE_URL's password)";
  return `
stack is up
  entitlement   ${s.entitlement}  (logs: ${s.logs.entitlement})
  notification  ${s.notification}  (logs: ${s.logs.notification})
  metrics       ${s.entitlement}/metrics (token needed)  ${s.notification}/metrics
  API token     ${s.tokens.api}  (caller "stack", read+write, valid for this run only)
  admin token   ${s.tokens.admin}  (Notification's webhook endpoints, read+write)
  notify token  ${s.tokens.notify}  (caller "stack-game", notify: POST /v1/notifications)
  receiver      ${s.demo.webhookUrl}  (WEBHOOK_URL: a demo webhook receiver that answers 204 to every delivery)
  debug token   ${s.tokens.debug}  (debug inbox)
  player token  PLAYER_TOKEN below: ${user}'s access token for /v1/me/ (${playerExpiry(s.player.expiresAt)}; signed by the stack's own demo issuer)
  player page   ${s.demo.page}/  (docs/examples/player.html on an origin of its own: API base ${s.notification}, PLAYER_TOKEN)
${pushLine(s)}
${extras(s).join("\n")}
  state         database ${s.names.database}, streams ${s.names.natsPrefix}-events… (bun run stack --reset drops them)

grant an item:
  curl -s -X POST ${s.entitlement}/v1/entitlements/grants ${api} -H 'Content-Type: application/json' -H 'Idempotency-Key: demo-${run}' -d '{"user_id":"${user}","stock_keeping_unit":"starter_pack","reason":"purchase","purchase_id":"p_${run}"}'
see it, and its notification (SENT after a moment):
  curl -s ${api} ${s.entitlement}/v1/users/${user}/entitlements
  curl -s ${debug} ${s.notification}/debug/notification/inbox/${user}
send the demo player a notification of your own (it reaches the inbox, the stream and the player page):
  curl -s -X POST ${s.notification}/v1/notifications -H 'Authorization: Bearer ${s.tokens.notify}' -H 'Content-Type: application/json' -H 'Idempotency-Key: hello-${run}' -d '{"type":"Hello","user_ids":["${user}"],"title":"Hello","data":{"from":"the stack"}}'

the examples of docs/api.md run with these set:
  export ENTITLEMENT=${s.entitlement} NOTIFICATION=${s.notification} TOKEN=${s.tokens.api} DEBUG_TOKEN=${s.tokens.debug} USER_ID=${user} PLAYER_TOKEN=${s.tokens.player} ADMIN_TOKEN=${s.tokens.admin} NOTIFY_TOKEN=${s.tokens.notify} WEBHOOK_URL=${s.demo.webhookUrl}

operator commands (docs/operations.md) read the stack's database from DATABASE_URL${passwordNote}:
  DATABASE_URL='${database}' dist/entitlement outbox stats
  DATABASE_URL='${database}' dist/notification dlq list

Ctrl-C stops everything this command started.`;
}
