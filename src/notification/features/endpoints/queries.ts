// SQL of the endpoints admin API and operator subcommands, one statement per function.
import type { Db } from "../../../shared/db.ts";

/**
 * Told after a commit that made deliveries due (a replay, an endpoint enabled again) or that gave stored notifications
 * an endpoint to go to (one created enabled): every replica's endpoint worker LISTENs on it.
 */
export const ENDPOINT_DUE_CHANNEL = "webhook_deliveries_due";

export type EndpointRow = {
  endpoint_id: string;
  url: string;
  description: string;
  event_types: string[] | null;
  enabled: boolean;
  disabled_reason: string | null;
  failing_since: Date | null;
  previous_secret_until: Date | null;
  created_at: Date;
  updated_at: Date;
};

const COLUMNS = (db: Db) =>
  db`endpoint_id, url, description, event_types, enabled, disabled_reason, failing_since, previous_secret_until,
     created_at, updated_at`;

export async function insertEndpoint(
  db: Db,
  input: {
    endpointId: string;
    url: string;
    description: string;
    eventTypes: string[] | null;
    enabled: boolean;
    secretCiphertext: string;
    now: Date;
  },
): Promise<EndpointRow> {
  const [row] = await db<EndpointRow[]>`
    insert into webhook_endpoints
      (endpoint_id, url, description, event_types, enabled, secret_ciphertext, created_at, updated_at)
    values (${input.endpointId}, ${input.url}, ${input.description}, ${input.eventTypes}::text[], ${input.enabled},
            ${input.secretCiphertext}, ${input.now}, ${input.now})
    returning ${COLUMNS(db)}`;
  return row as EndpointRow;
}

export async function findEndpoint(db: Db, endpointId: string): Promise<EndpointRow | undefined> {
  const [row] = await db<EndpointRow[]>`select ${COLUMNS(db)} from webhook_endpoints where endpoint_id = ${endpointId}`;
  return row;
}

/** Oldest first, after the cursor's (created_at, endpoint_id). */
export async function listEndpoints(
  db: Db,
  input: { limit: number; after?: { createdAt: string; endpointId: string } },
): Promise<EndpointRow[]> {
  const after = input.after
    ? db`where (created_at, endpoint_id) > (${input.after.createdAt}::timestamptz, ${input.after.endpointId}::uuid)`
    : db``;
  return db<EndpointRow[]>`
    select ${COLUMNS(db)} from webhook_endpoints ${after}
    order by created_at, endpoint_id limit ${input.limit}`;
}

export type EndpointChange = {
  url?: string;
  description?: string;
  eventTypes?: string[] | null;
  enabled?: boolean;
};

/**
 * Applies the given fields. Enabling a disabled endpoint clears its reason and its run of failures; returns the row,
 * and when the update enabled it again, the start of the failure run that had disabled it.
 */
export async function updateEndpoint(
  db: Db,
  input: { endpointId: string; change: EndpointChange; now: Date },
): Promise<{ row: EndpointRow; reenabledAfterFailuresSince: Date | null; reenabled: boolean } | undefined> {
  const c = input.change;
  const [row] = await db<(EndpointRow & { was_enabled: boolean; was_failing_since: Date | null })[]>`
    with before as (
      select endpoint_id, enabled, failing_since from webhook_endpoints where endpoint_id = ${input.endpointId} for update
    )
    update webhook_endpoints e
    set url = coalesce(${c.url ?? null}, e.url),
        description = coalesce(${c.description ?? null}, e.description),
        event_types = case when ${c.eventTypes !== undefined} then ${c.eventTypes ?? null}::text[] else e.event_types end,
        enabled = coalesce(${c.enabled ?? null}::boolean, e.enabled),
        disabled_reason = case when ${c.enabled === true} then null else e.disabled_reason end,
        failing_since = case when ${c.enabled === true} and not before.enabled then null else e.failing_since end,
        updated_at = ${input.now}
    from before
    where e.endpoint_id = before.endpoint_id
    returning e.endpoint_id, e.url, e.description, e.event_types, e.enabled, e.disabled_reason, e.failing_since,
              e.previous_secret_until, e.created_at, e.updated_at,
              before.enabled as was_enabled, before.failing_since as was_failing_since`;
  if (!row) return undefined;
  const { was_enabled, was_failing_since, ...endpoint } = row;
  const reenabled = !was_enabled && endpoint.enabled;
  return { row: endpoint, reenabled, reenabledAfterFailuresSince: reenabled ? was_failing_since : null };
}

/** Deliveries that ended FAILED during the run of failures that disabled the endpoint go out again. */
export async function requeueFailedSince(db: Db, input: { endpointId: string; since: Date; now: Date }) {
  const result = await db`
    update webhook_deliveries
    set status = 'PENDING', attempt_count = 0, next_attempt_at = ${input.now}, locked_by = null
    where endpoint_id = ${input.endpointId} and status = 'FAILED' and created_at >= ${input.since}`;
  return result.count;
}

export async function deleteEndpoint(db: Db, endpointId: string): Promise<boolean> {
  const result = await db`delete from webhook_endpoints where endpoint_id = ${endpointId}`;
  return result.count === 1;
}

/** Old secrets kept besides the previous one; with it and the current one, a request carries at most five signatures. */
export const MAX_OLDER_SECRETS = 3;

/**
 * The new secret becomes current; the current one stays valid until `previousUntil`. The previous one, while its
 * overlap lasts, joins the older secrets still within theirs (the latest-ending MAX_OLDER_SECRETS). A null
 * `previousUntil` (an overlap of 0s, as after a leak) ends every old secret at once.
 */
export async function rotateEndpointSecret(
  db: Db,
  input: { endpointId: string; secretCiphertext: string; previousUntil: Date | null; now: Date },
): Promise<boolean> {
  const result = await db`
    update webhook_endpoints
    set older_secrets = (
          select coalesce(jsonb_agg(k.s order by k.until desc), '[]'::jsonb)
          from (
            select o.s, (o.s ->> 'until')::timestamptz as until
            from (
              select s from jsonb_array_elements(older_secrets) s
              union all
              select jsonb_build_object('sealed', previous_secret_ciphertext, 'until', previous_secret_until)
              where previous_secret_ciphertext is not null
            ) o
            where (o.s ->> 'until')::timestamptz > ${input.now} and ${input.previousUntil}::timestamptz is not null
            order by until desc limit ${MAX_OLDER_SECRETS}
          ) k),
        previous_secret_ciphertext = case when ${input.previousUntil}::timestamptz is null then null else secret_ciphertext end,
        previous_secret_until = ${input.previousUntil}::timestamptz,
        secret_ciphertext = ${input.secretCiphertext}, updated_at = ${input.now}
    where endpoint_id = ${input.endpointId}`;
  return result.count === 1;
}

export type EndpointSummary = EndpointRow & { pending: number; failed: number };

/** Every endpoint with its deliveries waiting and ended FAILED, for the operator's list and the console. */
export async function listEndpointSummaries(db: Db, input: { limit: number }): Promise<EndpointSummary[]> {
  return db<EndpointSummary[]>`
    select ${COLUMNS(db)},
      (select count(*) from webhook_deliveries d
       where d.endpoint_id = e.endpoint_id and d.status in ('PENDING', 'PROCESSING'))::int as pending,
      (select count(*) from webhook_deliveries d where d.endpoint_id = e.endpoint_id and d.status = 'FAILED')::int as failed
    from webhook_endpoints e
    order by created_at, endpoint_id limit ${input.limit}`;
}

/** An old secret within its overlap, as older_secrets keeps it. */
export type OlderSecret = { sealed: string; until: string };

export type SealedSecrets = {
  endpoint_id: string;
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
  older_secrets: OlderSecret[];
};

/** Every endpoint's sealed secrets, for sealing them again with the current key. */
export async function listSealedSecrets(db: Db): Promise<SealedSecrets[]> {
  return db<SealedSecrets[]>`
    select endpoint_id, secret_ciphertext, previous_secret_ciphertext, older_secrets
    from webhook_endpoints order by endpoint_id`;
}

/** Replaces an endpoint's sealed secrets, only if they are still the ones read (a rotation meanwhile wins). */
export async function replaceSealedSecrets(db: Db, before: SealedSecrets, after: SealedSecrets): Promise<boolean> {
  const result = await db`
    update webhook_endpoints
    set secret_ciphertext = ${after.secret_ciphertext}, previous_secret_ciphertext = ${after.previous_secret_ciphertext},
        older_secrets = ${db.json(after.older_secrets)}::jsonb
    where endpoint_id = ${before.endpoint_id} and secret_ciphertext = ${before.secret_ciphertext}
      and previous_secret_ciphertext is not distinct from ${before.previous_secret_ciphertext}
      and older_secrets = ${db.json(before.older_secrets)}::jsonb`;
  return result.count === 1;
}
