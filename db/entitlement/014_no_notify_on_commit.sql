-- Nothing global on a commit. A NOTIFY sent inside a transaction makes its commit take the one lock on the cluster's
-- notification queue, held through the commit, so every write that sent one was serialised with every other: with
-- the outbox trigger, pgbench of one grant call did 1,302 transactions/s, without it 2,980 (2 cores, c=16). The
-- replica that commits now wakes its own relay and scheduler in memory, and tells the other replicas after commit,
-- outside the write transaction (docs/architecture.md, "Waking the workers").
drop trigger outbox_events_notify on outbox_events;
drop function notify_outbox();
drop trigger entitlement_expiries_insert_notify on entitlement_expiries;
drop trigger entitlement_expiries_update_notify on entitlement_expiries;
drop function notify_entitlement_expiries_due();
drop trigger point_reservations_due_notify on point_reservations;
drop function notify_point_reservations_due();
