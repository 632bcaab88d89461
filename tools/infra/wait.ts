// The one polling helper, for tests (through tests/support/wait.ts), the drills, the bench and the local stack: waits
// are polled with generous deadlines (a loaded 2-core CI machine), never fixed sleeps standing in for a check.

/**
 * Polls `probe` every `intervalMs` until it returns something other than undefined or false, and returns that; throws
 * after `timeoutMs`, naming `what` was awaited.
 */
export async function waitUntil<T>(
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  timeoutMs = 30_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await Bun.sleep(intervalMs);
  }
}
