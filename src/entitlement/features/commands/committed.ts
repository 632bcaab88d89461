// What a committed change leaves for the background workers: events to publish, and the earliest new due time.
// Told after the commit; work/wakeups.ts hears it.
export type CommittedWork = { events: boolean; dueAt?: Date };
