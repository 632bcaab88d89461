// A test container that exits while it starts (a broken image, a bad argument, a full disk) makes Testcontainers fail
// with whatever its wait strategy met next, e.g. "HTTP code 409 ... container stopped/paused", and leaves the
// container behind. `startExplained` says what happened instead (the container's state, exit code and last log lines)
// and removes it. Each start carries a label of its own, so exactly its container is found.

export const START_LABEL = "entitlement-notification.test-start-id";
const LOG_LINES = 20;

export type LeftBehind = { id: string; status: string; exitCode: number | undefined; logs: string };

/** What startExplained needs of the engine: the containers of one start, and their removal. */
export type StartCleanup = {
  leftBehind: (label: string) => Promise<LeftBehind[]>;
  remove: (id: string) => Promise<void>;
};

/**
 * The text of `docker logs` output: a container without a TTY sends frames of an 8-byte header (stream, three zero
 * bytes, big-endian length) and the payload; anything that does not parse as frames is taken as plain text.
 */
export function demuxLogs(bytes: Uint8Array): string {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const parts: Uint8Array[] = [];
  let at = 0;
  while (at + 8 <= bytes.byteLength) {
    const stream = bytes[at] as number;
    const framed = stream <= 2 && bytes[at + 1] === 0 && bytes[at + 2] === 0 && bytes[at + 3] === 0;
    const size = view.getUint32(at + 4);
    if (!framed || at + 8 + size > bytes.byteLength) return new TextDecoder().decode(bytes);
    parts.push(bytes.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  if (at !== bytes.byteLength) return new TextDecoder().decode(bytes);
  return parts.map((part) => new TextDecoder().decode(part)).join("");
}

/** The last `count` non-empty lines of `text`. */
export function tail(text: string, count = LOG_LINES): string {
  return text
    .split("\n")
    .map((line) => line.trimEnd())
    .filter((line) => line !== "")
    .slice(-count)
    .join("\n");
}

/** The error a failed start ends with: what the container did, then what Testcontainers said. */
export function explainStart(what: string, error: unknown, left: LeftBehind[]): string {
  const cause = error instanceof Error ? error.message : String(error);
  if (left.length === 0) return `${what} did not start: ${cause}`;
  const [container] = left as [LeftBehind];
  const exit = container.exitCode === undefined ? "" : `, exit code ${container.exitCode}`;
  const logs = tail(container.logs);
  return (
    `${what} did not start: its container ${container.status === "running" ? "was still running" : "exited"} ` +
    `(${container.status}${exit}) and has been removed. Its last log lines:\n` +
    `${logs === "" ? "(none)" : logs}\n(Testcontainers said: ${cause})`
  );
}

/** Runs `start`; when it fails, removes the container of `startId` and throws with its state and log tail. */
export async function startExplained<T>(
  what: string,
  startId: string,
  start: () => Promise<T>,
  cleanup: () => Promise<StartCleanup | undefined>,
): Promise<T> {
  try {
    return await start();
  } catch (error) {
    const engine = await cleanup().catch(() => undefined);
    const left = (await engine?.leftBehind(`${START_LABEL}=${startId}`).catch(() => [])) ?? [];
    for (const container of left) await engine?.remove(container.id).catch(() => {});
    throw new Error(explainStart(what, error, left));
  }
}
