// The reconnect delay of the PostgreSQL pool and which failures mean an unavailable database (src/shared/db.ts).
import { expect, test } from "bun:test";
import {
  isDatabaseNotUpYet,
  isDatabaseUnavailable,
  isTransientDbError,
  reconnectDelaySeconds,
  TlsFailure,
} from "../../src/shared/db.ts";

test("the reconnect delay grows with failures but never beyond 1s, so a pool is back soon after its database", () => {
  expect(reconnectDelaySeconds(0, () => 1)).toBeCloseTo(0.05);
  expect(reconnectDelaySeconds(3, () => 1)).toBeCloseTo(0.4);
  for (const retries of [5, 10, 50, 1000]) {
    expect(
      reconnectDelaySeconds(retries, () => 1),
      `after ${retries} failures`,
    ).toBe(1);
    expect(
      reconnectDelaySeconds(retries, () => 0),
      "jitter halves it at most",
    ).toBe(0.5);
  }
});

const failure = (code: string, message = code) => Object.assign(new Error(message), { code });

test("a database that refuses this process's login or TLS handshake is unavailable (503, not ready), like a lost one", () => {
  const refused = [
    "28P01", // invalid_password: a password rotated in the wrong order
    "28000", // invalid_authorization_specification: no pg_hba.conf line, a client certificate required
    "UNABLE_TO_VERIFY_LEAF_SIGNATURE", // a server certificate of another CA, presented without its chain
    "SELF_SIGNED_CERT_IN_CHAIN",
    "DEPTH_ZERO_SELF_SIGNED_CERT",
    "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
    "CERT_HAS_EXPIRED",
    "ERR_TLS_CERT_ALTNAME_INVALID",
    "ECONNRESET", // a server that stopped offering TLS hangs up on the handshake
    "57P01",
    "53300",
  ];
  for (const code of refused) {
    expect(isDatabaseUnavailable(failure(code)), code).toBe(true);
    expect(isTransientDbError(failure(code)), `${code} is retried, not given up`).toBe(true);
  }
});

test("every TLS failure code is classified, and the statement's own errors are not", () => {
  for (const code of TlsFailure) expect(isDatabaseUnavailable(failure(code)), code).toBe(true);
  for (const code of ["23505", "42P01", "42501", "22P02", "40001", "57014", "ERR_SSL_SOMETHING_ELSE"])
    expect(isDatabaseUnavailable(failure(code)), code).toBe(false);
  expect(isDatabaseUnavailable({ code: "28P01" }), "only errors").toBe(false);
});

test("at start, a server coming up is waited for; a refused login, a certificate or the statement's own error is not", () => {
  for (const code of ["57P01", "57P02", "57P03", "08006", "53300", "ECONNREFUSED", "ECONNRESET", "CONNECT_TIMEOUT"])
    expect(isDatabaseNotUpYet(failure(code)), code).toBe(true);
  for (const code of ["28P01", "28000", ...TlsFailure, "3D000", "42P01", "23505"])
    expect(isDatabaseNotUpYet(failure(code)), code).toBe(false);
});
