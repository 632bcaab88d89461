-- The W3C trace context of the consume that created each notification (docs/architecture.md): the delivery continues
-- that trace and sends it on the webhook request as `traceparent`. Null for rows written before tracing.
alter table notifications add column traceparent text;
