// The stack's NATS when the machine has no nats-server but a Docker engine answers: a container of the image the tests
// would use (tools/infra/containers.ts), JetStream in the container's own file system, so its streams go with it.
import { engine, loopback, natsContainer, PUBLIC_IMAGES, resolveImage, settleRyuk } from "./containers.ts";

export type NatsInContainer = { name: string; url: string; stop: () => Promise<void> };

/** How to start it; undefined when no engine answers or no NATS image can be had. */
export async function findNatsContainer(): Promise<(() => Promise<NatsInContainer>) | undefined> {
  const client = await engine();
  if (!client) return undefined;
  const image = await resolveImage(client, "NATS_IMAGE", PUBLIC_IMAGES.nats);
  if (!image) return undefined;
  return async () => {
    await settleRyuk(client);
    const container = await natsContainer(image).start();
    const host = loopback(container.getHost());
    const port = container.getMappedPort(4222);
    return {
      name: `${image} at ${host}:${port}`,
      url: `nats://${host}:${port}`,
      stop: async () => void (await container.stop({ timeout: 10_000, removeVolumes: true })),
    };
  };
}
