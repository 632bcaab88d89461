// Polling for tests: the one helper, shared with the drills, the bench and the local stack (tools/infra/wait.ts).
export { waitUntil } from "../../tools/infra/wait.ts";
