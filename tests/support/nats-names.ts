// Tests name their streams the way the local stack does (tools/infra/nats-names.ts).
export { pipelineNatsNames, pipelineStreams } from "../../tools/infra/nats-names.ts";
