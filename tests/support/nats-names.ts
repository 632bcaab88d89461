// Tests name their streams the way the local stack does (tools/nats-names.ts).
export { pipelineNatsNames, pipelineStreams } from "../../tools/nats-names.ts";
