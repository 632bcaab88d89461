// The soak's webhook endpoints: one healthy receiver that takes every type, and one flaky receiver that takes grants
// and the soak's sends (their custom type) only and answers 503 to the first attempt of about a third of the notifications (those whose id starts with 0-4),
// so that Notification's retries carry them. Each records the webhook-ids it accepted.
export type Receiver = { name: string; url: string; types?: string[]; accepted: Set<string>; attempts: () => number };

export type Receivers = { all: Receiver[]; stop: () => void };

function receiver(name: string, types: string[] | undefined, refuseFirst: (id: string) => boolean) {
  const accepted = new Set<string>();
  const refused = new Set<string>();
  let attempts = 0;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (request) => {
      attempts += 1;
      await request.arrayBuffer();
      const id = request.headers.get("webhook-id") ?? "";
      if (refuseFirst(id) && !refused.has(id)) {
        refused.add(id);
        return new Response("try again", { status: 503 });
      }
      accepted.add(id);
      return new Response(null, { status: 204 });
    },
  });
  const r: Receiver = { name, url: `http://127.0.0.1:${server.port}/hook`, types, accepted, attempts: () => attempts };
  return { r, stop: () => server.stop(true) };
}

export function startReceivers(sendType: string): Receivers {
  const healthy = receiver("healthy", undefined, () => false);
  const flaky = receiver("flaky", ["EntitlementGranted", sendType], (id) => "01234".includes(id[0] ?? ""));
  return {
    all: [healthy.r, flaky.r],
    stop: () => {
      healthy.stop();
      flaky.stop();
    },
  };
}

/** Registers each receiver as a webhook endpoint through Notification's admin API. */
export async function registerEndpoints(notificationUrl: string, adminToken: string, receivers: Receiver[]) {
  for (const r of receivers) {
    const body = { url: r.url, description: `soak ${r.name}`, ...(r.types ? { event_types: r.types } : {}) };
    const response = await fetch(`${notificationUrl}/v1/webhook-endpoints`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    if (response.status !== 201) throw new Error(`endpoint ${r.name}: ${response.status} ${await response.text()}`);
  }
}
