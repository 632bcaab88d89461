// Reading what `bun run stack` prints, for the tests that run it: its output up to a marker, the curl grant it prints
// and the debug inbox curl with its token, each exactly as printed.

/** What `stream` printed until `marker`; throws with what it printed when the marker does not come in `timeoutMs`. */
export async function readUntil(
  stream: ReadableStream<Uint8Array>,
  marker: string,
  timeoutMs: number,
): Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  while (!text.includes(marker)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`no "${marker}" within ${timeoutMs}ms:\n${text}`);
    const chunk = await Promise.race([reader.read(), Bun.sleep(left).then(() => ({ done: true, value: undefined }))]);
    if (chunk.done) throw new Error(`the stack ended before "${marker}":\n${text}`);
    text += decoder.decode(chunk.value);
  }
  reader.releaseLock();
  return text;
}

/** The printed curl grant, a shell command line; undefined when the output has none. */
export const printedGrant = (output: string): string | undefined =>
  /^ {2}(curl -s -X POST \S+\/v1\/entitlements\/grants .+)$/m.exec(output)?.[1];

/** The printed debug inbox request: its Authorization header and URL; undefined when the output has none. */
export function printedInbox(output: string): { authorization: string; url: string } | undefined {
  const inbox = /curl -s -H 'Authorization: (Bearer \S+)' (\S+\/debug\/notification\/inbox\/\S+)/.exec(output);
  return inbox ? { authorization: inbox[1] as string, url: inbox[2] as string } : undefined;
}
