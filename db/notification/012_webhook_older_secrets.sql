-- The secrets of earlier rotations still within their overlap, besides previous_secret_ciphertext (the one before the
-- last rotation): a second rotation moves that one here instead of dropping it before its overlap ends. Each entry is
-- {"sealed": <ciphertext>, "until": <timestamptz>}, newest first, at most three (outbound/endpoints/queries.ts).
-- The default makes adding it a catalogue change only. During a rolling upgrade the previous release neither reads nor
-- writes it: its replicas sign with the current and the previous secret only, and a rotation on one of them drops the
-- previous secret as it always did, while what is here stays until its own end.
alter table webhook_endpoints add column older_secrets jsonb not null default '[]'::jsonb;
