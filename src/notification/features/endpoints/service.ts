// The endpoints admin API's work, without HTTP: check the input, write, and shape the answers. URLs pass the SSRF guard
// here at registration and at every change; deliveries check them again.
import { parseDuration } from "../../../shared/config.ts";
import type { Sql } from "../../../shared/db.ts";
import { ApiError, badRequest } from "../../../shared/http/errors.ts";
import { decodeCursor, pageOf } from "../../../shared/http/paging.ts";
import { hasControlCharacter } from "../../../shared/http/path.ts";
import { isUuid } from "../../../shared/ids.ts";
import { parseInstant } from "../../../shared/instant.ts";
import type { Clock } from "../../../shared/runtime.ts";
import { endpointTypeProblem } from "../send/types.ts";
import {
  type CreateEndpointBody,
  type Endpoint,
  EVENT_TYPES_RULE,
  type PatchEndpointBody,
  type ReplayBody,
} from "./model.ts";
import {
  deleteEndpoint,
  ENDPOINT_DUE_CHANNEL,
  type EndpointRow,
  findEndpoint,
  insertEndpoint,
  listEndpoints,
  requeueFailedSince,
  rotateEndpointSecret,
  updateEndpoint,
} from "./queries.ts";
import { listAttempts, replayWindow } from "./replay-queries.ts";
import { newSigningSecret, type SecretBox } from "./secrets.ts";
import { allowedAddresses, parseEndpointUrl, type Resolve } from "./url-guard.ts";

export type EndpointServiceDeps = {
  sql: Sql;
  now: Clock;
  box: SecretBox;
  allowPrivate: boolean;
  resolve?: Resolve;
  /** Told after a commit that made deliveries due, so this process's worker starts at once. */
  onDue?: () => void;
};

const DAY_MS = 86_400_000;
export const MAX_OVERLAP_MS = 7 * DAY_MS;
const DEFAULT_OVERLAP = "24h";
/**
 * How long a delivery a replay queued is left out of the same replay asked for again: long enough to cover a client's
 * retries of a call whose answer it did not get, short enough that a window can be sent once more on purpose soon after.
 */
export const REPLAY_REPEAT_MS = 5 * 60_000;

const notFound = () => new ApiError(404, "NOT_FOUND", "no such endpoint");
const iso = (d: Date | null) => (d === null ? null : d.toISOString());

export function toEndpoint(row: EndpointRow): Endpoint {
  return {
    endpoint_id: row.endpoint_id,
    url: row.url,
    description: row.description,
    // Stored only through this API's validation: every one is a known type.
    event_types: row.event_types as Endpoint["event_types"],
    enabled: row.enabled,
    disabled_reason: row.disabled_reason,
    failing_since: iso(row.failing_since),
    previous_secret_until: iso(row.previous_secret_until),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** A path's endpoint id: 404 for anything that is not a UUID (no endpoint can have that id). */
export function checkEndpointId(text: string): string {
  if (!isUuid(text)) throw notFound();
  return text.toLowerCase();
}

/**
 * A body's event_types, checked before the schema is: a typo of a built-in type is the likeliest mistake, and the
 * schema's own 400 can name neither the value nor what would have been valid. The schema still checks everything else.
 */
export function checkEventTypes(body: unknown): void {
  if (typeof body !== "object" || body === null) return;
  const types = (body as { event_types?: unknown }).event_types;
  if (types === undefined || types === null) return;
  // Checked here, not left to the schema: the router would read a lone string as a one-item array.
  if (!Array.isArray(types)) throw badRequest(`body.event_types: must be ${EVENT_TYPES_RULE}`);
  for (const [index, type] of types.entries()) {
    const problem = endpointTypeProblem(`event_types[${index}]`, type);
    if (problem) throw badRequest(problem);
  }
}

async function checkUrl(deps: EndpointChangeDeps, text: string): Promise<string> {
  const url = parseEndpointUrl(text);
  await allowedAddresses(url, { allowPrivate: deps.allowPrivate, resolve: deps.resolve });
  return url.toString();
}

function checkDescription(text: string | undefined): string | undefined {
  if (text !== undefined && hasControlCharacter(text))
    throw badRequest("description must not contain control characters");
  return text;
}

export async function createEndpoint(deps: EndpointServiceDeps, body: CreateEndpointBody) {
  const url = await checkUrl(deps, body.url);
  const endpointId = crypto.randomUUID();
  const secret = newSigningSecret();
  const row = await insertEndpoint(deps.sql, {
    endpointId,
    url,
    description: checkDescription(body.description) ?? "",
    eventTypes: body.event_types ?? null,
    enabled: body.enabled ?? true,
    secretCiphertext: deps.box.seal(endpointId, secret),
    now: deps.now(),
  });
  // Idle workers with no endpoint to deliver to sleep through this process's stored notifications: wake them all.
  if (row.enabled) await announceDue(deps);
  return { ...toEndpoint(row), secret };
}

export async function listEndpointPage(deps: EndpointServiceDeps, query: { limit: number; cursor?: string }) {
  const key = decodeCursor(query.cursor, 2);
  const [createdAt, endpointId] = key ?? [];
  if (key && (parseInstant(createdAt ?? "") === undefined || !isUuid(endpointId ?? ""))) {
    throw badRequest("cursor is invalid");
  }
  const after = key ? { createdAt: createdAt as string, endpointId: endpointId as string } : undefined;
  const rows = await listEndpoints(deps.sql, { limit: query.limit + 1, after });
  const page = pageOf(rows, query.limit, (r) => [r.created_at.toISOString(), r.endpoint_id]);
  return { endpoints: page.items.map(toEndpoint), next_cursor: page.nextCursor };
}

export async function getEndpoint(deps: EndpointServiceDeps, endpointId: string) {
  const row = await findEndpoint(deps.sql, endpointId);
  if (!row) throw notFound();
  return toEndpoint(row);
}

/** What a change, a replay and a deletion need: no secret is touched (the operator subcommands use them too). */
export type EndpointChangeDeps = Omit<EndpointServiceDeps, "box">;

export async function changeEndpoint(deps: EndpointChangeDeps, endpointId: string, body: PatchEndpointBody) {
  const url = body.url === undefined ? undefined : await checkUrl(deps, body.url);
  const change = {
    url,
    description: checkDescription(body.description),
    eventTypes: body.event_types,
    enabled: body.enabled,
  };
  const now = deps.now();
  const result = await deps.sql.begin(async (tx) => {
    const updated = await updateEndpoint(tx, { endpointId, change, now });
    if (updated?.reenabledAfterFailuresSince) {
      await requeueFailedSince(tx, { endpointId, since: updated.reenabledAfterFailuresSince, now });
    }
    return updated;
  });
  if (!result) throw notFound();
  if (result.reenabled) await announceDue(deps);
  return toEndpoint(result.row);
}

export async function removeEndpoint(deps: EndpointServiceDeps, endpointId: string): Promise<void> {
  if (!(await deleteEndpoint(deps.sql, endpointId))) throw notFound();
}

export async function rotateSecret(deps: EndpointServiceDeps, endpointId: string, body: { overlap?: string }) {
  const overlapMs = parseDuration(body.overlap ?? DEFAULT_OVERLAP);
  if (overlapMs === undefined || overlapMs > MAX_OVERLAP_MS) {
    throw badRequest("overlap must be a duration from 0s to 7d, such as 24h");
  }
  const now = deps.now();
  const secret = newSigningSecret();
  const previousUntil = overlapMs === 0 ? null : new Date(now.getTime() + overlapMs);
  const sealed = deps.box.seal(endpointId, secret);
  if (!(await rotateEndpointSecret(deps.sql, { endpointId, secretCiphertext: sealed, previousUntil, now }))) {
    throw notFound();
  }
  return { secret };
}

export async function listAttemptPage(
  deps: EndpointServiceDeps,
  endpointId: string,
  query: { limit: number; cursor?: string },
) {
  const [before] = decodeCursor(query.cursor, 1) ?? [];
  if (before !== undefined && !/^\d{1,19}$/.test(before)) throw badRequest("cursor is invalid");
  if (!(await findEndpoint(deps.sql, endpointId))) throw notFound();
  const rows = await listAttempts(deps.sql, { endpointId, limit: query.limit + 1, before });
  const page = pageOf(rows, query.limit, (r) => [r.attempt_id]);
  const attempts = page.items.map((r) => ({ ...r, at: r.at.toISOString() }));
  return { attempts, next_cursor: page.nextCursor };
}

function replayWindowOf(body: ReplayBody, now: Date): { since: Date; until: Date } {
  const since = parseInstant(body.since);
  const until = body.until === undefined ? now : parseInstant(body.until);
  if (since === undefined) throw badRequest("since must be an ISO-8601 instant with an offset");
  if (until === undefined) throw badRequest("until must be an ISO-8601 instant with an offset");
  if (since >= until) throw badRequest("since must be before until");
  return { since, until };
}

/** What makes two replay requests the same one: the window as asked (no until: "until now") and the filter. */
function replayKeyOf(body: ReplayBody, since: Date): string {
  const until = body.until === undefined ? "now" : (parseInstant(body.until) as Date).toISOString();
  return `${since.toISOString()}/${until}/${body.only_failed === true ? "failed" : "all"}`;
}

export async function replay(deps: EndpointChangeDeps, endpointId: string, body: ReplayBody) {
  const now = deps.now();
  const window = replayWindowOf(body, now);
  const endpoint = await findEndpoint(deps.sql, endpointId);
  if (!endpoint) throw notFound();
  const replayId = crypto.randomUUID();
  const counts = await replayWindow(deps.sql, {
    endpointId,
    eventTypes: endpoint.event_types,
    ...window,
    onlyFailed: body.only_failed ?? false,
    replayId,
    replayKey: replayKeyOf(body, window.since),
    now,
    repeatAfter: new Date(now.getTime() - REPLAY_REPEAT_MS),
  });
  if (counts.queued > 0) await announceDue(deps);
  return { replay_id: replayId, notifications: counts.notifications };
}

/** After the commit: this process's worker at once, the other replicas through their LISTEN. */
async function announceDue(deps: EndpointChangeDeps): Promise<void> {
  deps.onDue?.();
  await deps.sql`select pg_notify(${ENDPOINT_DUE_CHANNEL}, '')`;
}
