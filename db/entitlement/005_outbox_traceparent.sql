-- The W3C trace context of the command that wrote each event (docs/architecture.md): the relay publishes it as the NATS
-- header `traceparent`, so Notification's spans join the request's trace. Null for rows written before tracing.
alter table outbox_events add column traceparent text;
