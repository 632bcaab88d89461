// A body read with a byte limit: the declared Content-Length is checked first, then the bytes as they arrive, so an
// over-long body (declared or not) is never held in memory. Shared by the API's JSON commands, the console's forms and
// the replies of a JWT issuer (its discovery document and key set).

/** The body's bytes, or undefined when it is (or says it is) longer than `limit`. No body is zero bytes. */
export async function readBodyAtMost(message: Request | Response, limit: number): Promise<Uint8Array | undefined> {
  if (Number(message.headers.get("content-length") ?? 0) > limit) return undefined;
  if (!message.body) return new Uint8Array();
  const reader = message.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > limit) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
