// A test container that exits while it starts is removed, and the error says what happened: its state, exit code and
// last log lines, then what Testcontainers said (tests/support/container-start.ts), instead of a bare "HTTP code 409
// container stopped/paused" and a container left behind.
import { expect, test } from "bun:test";
import {
  demuxLogs,
  explainStart,
  type LeftBehind,
  START_LABEL,
  type StartCleanup,
  startExplained,
  tail,
} from "../support/container-start.ts";

/** One `docker logs` frame: stream 1 (stdout) or 2 (stderr), three zero bytes, the length, the payload. */
function frame(stream: 1 | 2, text: string): Uint8Array {
  const payload = new TextEncoder().encode(text);
  const bytes = new Uint8Array(8 + payload.byteLength);
  bytes[0] = stream;
  new DataView(bytes.buffer).setUint32(4, payload.byteLength);
  bytes.set(payload, 8);
  return bytes;
}

test("docker logs frames become their text; plain text stays as it is", () => {
  const joined = new Uint8Array([...frame(1, "starting\n"), ...frame(2, "FATAL: data directory is corrupt\n")]);
  expect(demuxLogs(joined)).toBe("starting\nFATAL: data directory is corrupt\n");
  expect(demuxLogs(new TextEncoder().encode("a TTY's output\n"))).toBe("a TTY's output\n");
  expect(demuxLogs(new Uint8Array())).toBe("");
  expect(tail("1\n2\n\n3\n4\n", 2)).toBe("3\n4");
});

test("a container that exited at start is removed, and the error carries its exit code and its last lines", async () => {
  const exited: LeftBehind = {
    id: "c0ffee",
    status: "exited",
    exitCode: 1,
    logs: `${Array.from({ length: 40 }, (_, i) => `line ${i}`).join("\n")}\npostgres: could not open file "x"\n`,
  };
  const asked: string[] = [];
  const removed: string[] = [];
  const cleanup: StartCleanup = {
    leftBehind: async (label) => {
      asked.push(label);
      return [exited];
    },
    remove: async (id) => void removed.push(id),
  };
  const start = async (): Promise<never> => {
    throw new Error("(HTTP code 409) unexpected - container stopped/paused");
  };
  const failure = await startExplained("PostgreSQL (postgres:16-alpine)", "start-1", start, async () => cleanup).catch(
    (error: Error) => error,
  );
  expect(asked).toEqual([`${START_LABEL}=start-1`]);
  expect(removed).toEqual(["c0ffee"]);
  const message = (failure as Error).message;
  expect(message).toStartWith(
    "PostgreSQL (postgres:16-alpine) did not start: its container exited (exited, exit code 1)",
  );
  expect(message).toContain('postgres: could not open file "x"');
  expect(message).not.toContain("line 20\n");
  expect(message).toContain("Testcontainers said: (HTTP code 409) unexpected - container stopped/paused");
});

test("without an engine to ask, or with nothing left behind, the error still names what did not start", async () => {
  const start = async (): Promise<never> => {
    throw new Error("pull access denied");
  };
  const noEngine = await startExplained("NATS (nats:2.11-alpine)", "s", start, async () => undefined).catch(
    (error: Error) => error.message,
  );
  expect(noEngine).toBe("NATS (nats:2.11-alpine) did not start: pull access denied");
  expect(explainStart("NATS", new Error("timeout"), [{ id: "x", status: "running", exitCode: 0, logs: "" }])).toContain(
    "was still running (running, exit code 0) and has been removed. Its last log lines:\n(none)",
  );
});

test("a start that succeeds asks the engine nothing", async () => {
  let asked = false;
  const started = await startExplained(
    "NATS",
    "s",
    async () => "started",
    async () => {
      asked = true;
      return undefined;
    },
  );
  expect(started).toBe("started");
  expect(asked).toBe(false);
});
