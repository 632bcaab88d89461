-- The W3C trace context of the consume that created each notification (CONTRACT §3.4): the delivery continues that
-- trace and sends it on the webhook request as `traceparent`. Null for rows written before tracing.
alter table notifications add column traceparent text;
