// `notification endpoints list|disable|enable|replay` (docs/operations.md): the webhook endpoints without the admin
// API. Enabling and replaying go through the API's own service functions; each is safe to run twice.
import { EXIT_USAGE, type Subcommand } from "../../shared/cli.ts";
import { isUuid } from "../../shared/ids.ts";
import type { OpsDeps } from "../../shared/ops.ts";
import { systemClock } from "../../shared/runtime.ts";
import type { NotificationConfig } from "../config.ts";
import { findEndpoint, listEndpointSummaries } from "../outbound/endpoints/queries.ts";
import { changeEndpoint, type EndpointChangeDeps, replay } from "../outbound/endpoints/service.ts";
import { type OpsEnv, parseLimit, withOps } from "./context.ts";
import { resealSecrets } from "./reseal.ts";

export const ENDPOINTS_USAGE =
  "usage: notification endpoints list [--limit N] | disable <endpoint_id> | enable <endpoint_id> | " +
  "replay <endpoint_id> --since <ISO-8601> [--until <ISO-8601>] [--only-failed] | reseal";

type Ops = OpsDeps & { config: NotificationConfig };
type Parsed =
  | { op: "list"; limit: number }
  | { op: "reseal" }
  | { op: "disable" | "enable"; id: string }
  | { op: "replay"; id: string; since: string; until?: string; onlyFailed: boolean };

const serviceOf = ({ sql, config }: Ops): EndpointChangeDeps => ({
  sql,
  now: systemClock,
  allowPrivate: config.endpoints.allowPrivate,
});

export async function printEndpoints({ sql, out }: Ops, limit: number): Promise<number> {
  const rows = await listEndpointSummaries(sql, { limit });
  for (const e of rows) {
    out(
      `${e.endpoint_id} ${e.enabled ? "enabled" : "disabled"} url=${e.url} types=${e.event_types?.join("+") ?? "*"} ` +
        `pending=${e.pending} failed=${e.failed} failing_since=${e.failing_since?.toISOString() ?? "none"} ` +
        `disabled_reason=${JSON.stringify(e.disabled_reason)}`,
    );
  }
  out(rows.length === 0 ? "no webhook endpoints" : `${rows.length} webhook endpoint(s)`);
  return 0;
}

export async function setEnabled(ops: Ops, id: string, enabled: boolean): Promise<number> {
  const before = await findEndpoint(ops.sql, id);
  if (!before) {
    ops.out(`no webhook endpoint ${id}`);
    return 1;
  }
  if (before.enabled === enabled) {
    ops.out(`endpoint ${id} is already ${enabled ? "enabled" : "disabled"}: nothing to do`);
    return 0;
  }
  await changeEndpoint(serviceOf(ops), id, { enabled });
  ops.out(`endpoint ${id}: ${enabled ? "disabled -> enabled, what waited is sent" : "enabled -> disabled"}`);
  return 0;
}

export async function replayEndpoint(ops: Ops, p: Extract<Parsed, { op: "replay" }>): Promise<number> {
  const body = { since: p.since, until: p.until, only_failed: p.onlyFailed };
  const accepted = await replay(serviceOf(ops), p.id, body);
  ops.out(
    `replay ${accepted.replay_id}: ${accepted.notifications} notification(s) of the window sent to ${p.id} again`,
  );
  return 0;
}

function parseReplay(id: string, rest: string[]): Parsed | undefined {
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i] ?? "";
    if (flag === "--only-failed") flags[flag] = true;
    else if ((flag === "--since" || flag === "--until") && rest[i + 1] !== undefined) flags[flag] = rest[++i] as string;
    else return undefined;
  }
  const since = flags["--since"];
  const until = flags["--until"];
  if (typeof since !== "string") return undefined;
  return {
    op: "replay",
    id,
    since,
    until: typeof until === "string" ? until : undefined,
    onlyFailed: !!flags["--only-failed"],
  };
}

export function parseEndpointsArgs(args: string[]): Parsed | undefined {
  const [op, id, ...rest] = args;
  if (op === "reseal") return args.length === 1 ? { op } : undefined;
  if (op === "list") {
    const limit = parseLimit(args.slice(1));
    return limit === undefined ? undefined : { op, limit };
  }
  if (id === undefined || !isUuid(id)) return undefined;
  if ((op === "disable" || op === "enable") && rest.length === 0) return { op, id: id.toLowerCase() };
  return op === "replay" ? parseReplay(id.toLowerCase(), rest) : undefined;
}

export function endpointsSubcommand(env: OpsEnv = process.env): Subcommand {
  return {
    name: "endpoints",
    summary:
      "endpoints list | disable <id> | enable <id> | replay <id> --since T | reseal   (webhook endpoints, docs/operations.md)",
    run: async (args) => {
      const parsed = parseEndpointsArgs(args);
      if (!parsed) {
        console.error(ENDPOINTS_USAGE);
        return EXIT_USAGE;
      }
      return withOps(env, `endpoints ${args.join(" ")}`, (ops) => {
        if (parsed.op === "list") return printEndpoints(ops, parsed.limit);
        if (parsed.op === "reseal") return resealSecrets(ops);
        if (parsed.op === "replay") return replayEndpoint(ops, parsed);
        return setEnabled(ops, parsed.id, parsed.op === "enable");
      });
    },
  };
}
