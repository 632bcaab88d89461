// Webhook receivers for the endpoints bench (tests/bench/endpoints.ts), in a process of their own so that their work
// does not share the event loop of the service they measure. Serves COUNT receivers on 127.0.0.1; those listed in
// HANGING never answer. Each records when every webhook-id arrived (epoch ms, sub-millisecond); GET /receipts answers
// them. Prints the ports as one JSON line once listening. With TLS_CERT and TLS_KEY they serve https.
const count = Number(process.env.COUNT ?? 10);
const hanging = new Set((process.env.HANGING ?? "").split(",").filter(Boolean).map(Number));
const nowMs = () => performance.timeOrigin + performance.now();

const ports = Array.from({ length: count }, (_, index) => {
  const receipts: [string, number][] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    ...(process.env.TLS_CERT
      ? { tls: { cert: Bun.file(process.env.TLS_CERT), key: Bun.file(process.env.TLS_KEY ?? "") } }
      : {}),
    fetch: async (request) => {
      if (request.method === "GET") return Response.json(receipts);
      const at = nowMs();
      await request.arrayBuffer();
      receipts.push([request.headers.get("webhook-id") ?? "", at]);
      if (hanging.has(index)) return new Promise<Response>(() => {});
      return new Response(null, { status: 204 });
    },
  });
  return server.port;
});
console.log(JSON.stringify({ ports }));
