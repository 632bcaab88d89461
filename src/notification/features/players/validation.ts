// The mark-read body, checked before its schema is: the schema's own 400 names neither the field nor the rule, and a
// seq beyond what PostgreSQL's bigint holds would otherwise reach the database and fail there as a 500. The schema
// (model.ts ReadBody) still documents the body and checks it after this.
import { badRequest } from "../../../shared/http/errors.ts";
import { isUuid } from "../../../shared/ids.ts";
import { MAX_SEQ, READ_IDS_MAX } from "./model.ts";

const EITHER = `the body must have notification_ids or up_to_seq`;

export function checkReadBody(body: unknown): void {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw badRequest(EITHER);
  const byIds = "notification_ids" in body;
  const upTo = "up_to_seq" in body;
  if (byIds && upTo) throw badRequest(`${EITHER}, not both`);
  if (byIds) checkIds(body.notification_ids);
  else if (upTo) checkSeq(body.up_to_seq);
  else throw badRequest(EITHER);
}

function checkIds(ids: unknown): void {
  if (!Array.isArray(ids) || ids.length < 1 || ids.length > READ_IDS_MAX) {
    throw badRequest(`notification_ids must be an array of 1 to ${READ_IDS_MAX} notification ids`);
  }
  const bad = ids.findIndex((id) => typeof id !== "string" || !isUuid(id));
  if (bad !== -1) throw badRequest(`notification_ids[${bad}] must be a notification id (a UUID)`);
}

/** Seqs are JSON numbers in every answer, so the largest a client can name is the largest exact integer. */
function checkSeq(seq: unknown): void {
  if (!Number.isSafeInteger(seq) || (seq as number) < 0) {
    throw badRequest(`up_to_seq must be an integer from 0 to ${MAX_SEQ}`);
  }
}
