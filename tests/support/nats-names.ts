// Tests name their streams the way the local stack does (tools/infra/nats-names.ts), and remove a pipeline's streams
// when they are done.
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { pipelineStreams } from "../../tools/infra/nats-names.ts";

export { pipelineNatsNames, pipelineStreams } from "../../tools/infra/nats-names.ts";

/** Deletes every stream of the pipeline named `stream` that exists (pipelineNatsNames), through a connection of its own. */
export async function deletePipelineStreams(servers: string, stream: string): Promise<void> {
  const nc = await connect({ servers });
  try {
    const jsm = await jetstreamManager(nc);
    for (const name of pipelineStreams(stream)) await jsm.streams.delete(name).catch(() => false);
  } finally {
    await nc.close();
  }
}
