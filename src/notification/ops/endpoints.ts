// `notification endpoints list|disable|enable|replay` (docs/operations.md): the webhook endpoints without the admin
// API. Enabling and replaying go through the API's own service functions; each is safe to run twice.
import type { Subcommand } from "../../shared/cli.ts";
import { operation, positionals, splitFlags, UsageError, uuidArgument } from "../../shared/cli-args.ts";
import type { OpsDeps } from "../../shared/ops.ts";
import { systemClock } from "../../shared/runtime.ts";
import type { NotificationConfig } from "../config.ts";
import { findEndpoint, listEndpointSummaries } from "../features/endpoints/queries.ts";
import { changeEndpoint, type EndpointChangeDeps, replay } from "../features/endpoints/service.ts";
import { type OpsEnv, opsSubcommand, parseLimit } from "./context.ts";
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

function parseReplay(rest: string[]): Parsed {
  const spec = { "--since": "value", "--until": "value", "--only-failed": "switch" } as const;
  const { positional, flags } = splitFlags(rest, spec);
  const [id] = positionals(positional, ["<endpoint_id>"]) as [string];
  const since = flags["--since"];
  if (since === undefined) throw new UsageError("missing --since <ISO-8601>");
  const onlyFailed = flags["--only-failed"] === true;
  return { op: "replay", id: uuidArgument("<endpoint_id>", id), since, until: flags["--until"], onlyFailed };
}

/** The arguments of `endpoints`; anything else throws a UsageError saying what was wrong. */
export function parseEndpointsArgs(args: string[]): Parsed {
  const [first, ...rest] = args;
  const op = operation(first, ["list", "disable", "enable", "replay", "reseal"] as const);
  if (op === "reseal") {
    positionals(rest, []);
    return { op };
  }
  if (op === "list") return { op, limit: parseLimit(rest) };
  if (op === "replay") return parseReplay(rest);
  const [id] = positionals(rest, ["<endpoint_id>"]) as [string];
  return { op, id: uuidArgument("<endpoint_id>", id) };
}

export function endpointsSubcommand(env: OpsEnv = process.env): Subcommand {
  return opsSubcommand(env, {
    name: "endpoints",
    summary:
      "endpoints list | disable <id> | enable <id> | replay <id> --since T | reseal   (webhook endpoints, docs/operations.md)",
    usage: ENDPOINTS_USAGE,
    parse: parseEndpointsArgs,
    run: (ops, parsed) => {
      if (parsed.op === "list") return printEndpoints(ops, parsed.limit);
      if (parsed.op === "reseal") return resealSecrets(ops);
      if (parsed.op === "replay") return replayEndpoint(ops, parsed);
      return setEnabled(ops, parsed.id, parsed.op === "enable");
    },
  });
}
