// A body read with a byte limit: the declared Content-Length is checked first, then the bytes, so an over-long body
// (declared or not) is never held in memory: one that declares its length is read whole (the server reads no more
// than it), one that streams is measured chunk by chunk as it arrives. Shared by the API's JSON commands, the
// console's forms and the replies of a JWT issuer (its discovery document and key set).

/** The body's bytes, or undefined when it is (or says it is) longer than `limit`. No body is zero bytes. */
export async function readBodyAtMost(message: Request | Response, limit: number): Promise<Uint8Array | undefined> {
  const declared = message.headers.get("content-length");
  if (Number(declared ?? 0) > limit) return undefined;
  if (!message.body) return new Uint8Array();
  // A request that declares its length holds that many bytes and no more (the server frames the body by it), so it is
  // read whole, without a promise and a stream chunk per read. A response is read chunk by chunk whatever it declares:
  // fetch decodes a compressed body, which may be longer than its declared length.
  if (message instanceof Request && declared !== null && /^\d+$/.test(declared)) {
    const bytes = new Uint8Array(await message.arrayBuffer());
    return bytes.length > limit ? undefined : bytes;
  }
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
