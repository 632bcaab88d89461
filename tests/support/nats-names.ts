// Tests name their streams the way the local stack does (scripts/nats-names.ts).
export { pipelineNatsNames, pipelineStreams } from "../../scripts/nats-names.ts";
