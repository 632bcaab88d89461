-- Replies are made by the service, once, from what a command stored: an idempotency record keeps the facts of the
-- answer (response_facts: a version, a balance, a status, a row's fields) instead of a reply body. The previous
-- release stores and reads bodies (response_body), so both stay until the release after: a record has its body, its
-- facts, or both, and response_code stays filled for that release's reads. The functions that store facts are new
-- (db/entitlement/functions/); the previous release's functions of the same commands become wrappers over them that
-- render its reply from the facts, and are dropped by the release after. This migration also stops a previous
-- replica restarted during the rollout from applying its own texts of those functions.
alter table idempotency_keys add column response_facts jsonb;
alter table idempotency_keys alter column response_body drop not null;
alter table idempotency_keys add constraint idempotency_keys_reply_check
  check (response_body is not null or response_facts is not null);
