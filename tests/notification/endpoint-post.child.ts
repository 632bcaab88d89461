// Run by endpoints-tls.int.test.ts in a process of its own, so that NODE_EXTRA_CA_CERTS (read at start) can make the
// test CA trusted: one POST through the endpoints' own request path to URL, connected to ADDRESS.
import { postToEndpoint } from "../../src/notification/work/endpoints/post.ts";

const url = new URL(process.env.URL ?? "");
const address = process.env.ADDRESS ?? "127.0.0.1";
try {
  const result = await postToEndpoint({
    url,
    addresses: [{ address, family: 4 }],
    headers: { "content-type": "application/json" },
    body: "{}",
    timeoutMs: 5_000,
  });
  console.log(JSON.stringify({ status: result.statusCode, body: result.body }));
} catch (error) {
  console.log(JSON.stringify({ error: error instanceof Error ? error.message : String(error) }));
}
