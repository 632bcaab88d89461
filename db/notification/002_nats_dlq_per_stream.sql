-- A stream sequence is unique only within its stream: two streams (or a stream deleted and created again under
-- another name) may both give up message 42. Key the NATS DLQ by (stream, stream_seq), so no advisory is dropped as
-- a "duplicate" of another stream's message.
update notification_nats_dlq set stream = '' where stream is null;
alter table notification_nats_dlq
  alter column stream set default '',
  alter column stream set not null,
  drop constraint notification_nats_dlq_pkey,
  add primary key (stream, stream_seq);
