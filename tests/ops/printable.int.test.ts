// What the operator commands print comes partly from stored data: ids and error texts written by callers and
// receivers. Through the real commands (console output), no control character reaches the terminal (docs/operations.md).
import { expect, spyOn, test } from "bun:test";
import { outboxSubcommand } from "../../src/entitlement/ops/outbox.ts";
import { dlqSubcommand } from "../../src/notification/ops/dlq.ts";
import { printable } from "../../src/shared/ops.ts";
import { useTestDatabase } from "../support/infra.ts";

const f = useTestDatabase("ops_printable", { service: "entitlement", poolMax: 1 });

const HOSTILE = "u\u001b[2J\u001b]0;pwned\u0007\r\nFORGED LINE\u009b31m\u2028x\u202eesrever\u2066\u200b";
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is what the test checks
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]/;

/** Everything the command printed, one console call per element. */
async function printed(run: () => Promise<number>): Promise<{ code: number; lines: string[]; text: string }> {
  const lines: string[] = [];
  const log = spyOn(console, "log").mockImplementation((...args: unknown[]) => void lines.push(args.join(" ")));
  const error = spyOn(console, "error").mockImplementation((...args: unknown[]) => void lines.push(args.join(" ")));
  try {
    const code = await run();
    return { code, lines, text: lines.join("\n") };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

test("printable shows control characters and line separators as escapes", () => {
  expect(printable("a\u001b[31mb\nc\u0085d\u2028e\u007f")).toBe("a\\x1b[31mb\\x0ac\\x85d\\u2028e\\x7f");
  expect(printable("plain ü € 😀")).toBe("plain ü € 😀");
});

test("printable shows the bidi and zero-width format characters as escapes", () => {
  const hidden = [0x061c, 0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2060];
  hidden.push(0x2066, 0x2067, 0x2068, 0x2069, 0xfeff);
  for (const code of hidden) {
    const escaped = `\\u${code.toString(16).padStart(4, "0")}`;
    expect(printable(`a${String.fromCharCode(code)}b`), `U+${code.toString(16)} is escaped`).toBe(`a${escaped}b`);
  }
  expect(printable("user\u202Eevil")).toBe("user\\u202eevil");
});

test("outbox requeue prints a stored id with escapes, never raw", async () => {
  const id = crypto.randomUUID();
  await f.sql`
    insert into entitlement.outbox_events (event_id, event_type, aggregate_key, payload, status, attempt_count, last_error)
    values (${id}, 'EntitlementGranted', ${`${HOSTILE}:sku`}, ${f.sql.json({ event_id: id })}, 'FAILED', 10, ${HOSTILE})`;
  const { code, lines, text } = await printed(() => outboxSubcommand({ DATABASE_URL: f.db.url }).run(["requeue", id]));
  expect(code).toBe(0);
  expect(text).toContain(`requeued ${id}`);
  expect(text).toContain("\\x1b[2J");
  for (const line of lines) {
    expect(CONTROL.test(line), `no control character reaches the terminal: ${JSON.stringify(line)}`).toBe(false);
  }
});

test("dlq list prints stored user ids and errors with escapes, never raw", async () => {
  const id = crypto.randomUUID();
  const eventId = crypto.randomUUID();
  await f.sql`
    insert into notification.notifications (notification_id, event_id, user_id, type, occurred_at, payload_json, status,
                                            attempt_count, last_error)
    values (${id}, ${eventId}, ${HOSTILE}, 'EntitlementGranted', now(), ${f.sql.json({ event_id: eventId })}, 'FAILED', 10,
            ${HOSTILE})`;
  await f.sql`
    insert into notification.notification_dlq (dlq_id, notification_id, event_id, payload_json, error_message)
    values (${crypto.randomUUID()}, ${id}, ${eventId}, ${f.sql.json({ event_id: eventId })}, ${HOSTILE})`;
  const { code, lines, text } = await printed(() => dlqSubcommand({ DATABASE_URL: f.db.url }).run(["list"]));
  expect(code).toBe(0);
  expect(text).toContain(id);
  for (const line of lines) {
    expect(CONTROL.test(line), `no control character reaches the terminal: ${JSON.stringify(line)}`).toBe(false);
  }
});
