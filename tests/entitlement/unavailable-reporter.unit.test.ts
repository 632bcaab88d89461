// An unavailable database during an outage: readiness hears of every failing request, the log of each kind once.
import { expect, test } from "bun:test";
import { createUnavailableReporter } from "../../src/entitlement/edge/route-deps.ts";
import { capturedLog } from "../support/captures.ts";

const failure = (code: string, message: string) => Object.assign(new Error(message), { code });

test("an outage is logged once per kind of failure, reported every time, and logged again after a quiet spell", async () => {
  const { lines, log } = capturedLog();
  const reported: unknown[] = [];
  let clock = 0;
  const onUnavailable = createUnavailableReporter({
    log,
    report: (e) => reported.push(e),
    quietMs: 10_000,
    now: () => clock,
  });
  const closed = failure("CONNECTION_CLOSED", "write CONNECTION_CLOSED 127.0.0.1:5432");
  const password = failure("28P01", 'password authentication failed for user "svc"');
  onUnavailable(closed);
  for (let i = 0; i < 50; i++) {
    clock += 1_000;
    onUnavailable(i % 10 ? password : closed);
  }
  expect(reported, "readiness hears of every failure").toHaveLength(51);
  await Bun.sleep(0);
  expect(lines.map((l) => [l.msg, l.code, l.reason])).toEqual([
    ["database unavailable", "CONNECTION_CLOSED", "write CONNECTION_CLOSED 127.0.0.1:5432"],
    ["database unavailable", "28P01", 'password authentication failed for user "svc"'],
  ]);
  clock += 9_999;
  onUnavailable(password);
  clock += 10_000;
  onUnavailable(password);
  await Bun.sleep(0);
  expect(lines, "a failure after 10s without one starts a new episode").toHaveLength(3);
});

test("the line carries the code and message, not the error's other fields (a TLS error's peer certificate)", async () => {
  const { lines, log } = capturedLog();
  const tls = Object.assign(new Error("Hostname/IP does not match certificate's altnames"), {
    code: "ERR_TLS_CERT_ALTNAME_INVALID",
    cert: { raw: Buffer.alloc(512) },
  });
  createUnavailableReporter({ log, report: () => {} })(tls);
  await Bun.sleep(0);
  expect(Object.keys(lines[0] ?? {}).sort()).toEqual(["code", "hostname", "level", "msg", "pid", "reason", "time"]);
});
