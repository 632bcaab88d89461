// Tests that need something from the operating system (a tool, PostgreSQL's server binaries). .ci/run installs it;
// where it is missing, a CI run fails (so a green CI always means the check ran) and a developer run skips the test
// with a warning saying what to install, never a silent pass.
import { test } from "bun:test";

type Body = () => Promise<void> | void;
export type TestFn = (name: string, body: Body, timeoutMs?: number) => void;

/** `test` when `missing` is undefined; otherwise a failing test under CI=true, else a skipped one naming `missing`. */
export function testRequiring(missing: string | undefined): TestFn {
  if (!missing) return (name, body, timeoutMs) => test(name, body, timeoutMs);
  if (process.env.CI) {
    return (name) =>
      test(name, () => {
        throw new Error(missing);
      });
  }
  console.warn(`SKIPPED: ${missing}`);
  return (name, body, timeoutMs) => test.skip(`${name} [skipped: ${missing}]`, body, timeoutMs);
}
