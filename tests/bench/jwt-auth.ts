// The cost of JWT access tokens: the same grant load with a client-credentials token of an OpenID provider (the
// test provider of tests/support/idp.ts, in the harness process) and with a static token, alternating so that a
// drifting machine favours neither; grants/s of each averaged, and their ratio.
import { EntitlementEnv } from "../../src/entitlement/config.ts";
import { CLIENTS, IDP_AUDIENCE, startTestIdp, type TestIdp } from "../support/idp.ts";
import { runGrantLoad } from "./grants.ts";

export type JwtAuthResult = { jwt: number; static: number; ratio: number; rounds: number; non2xx: number };

/** Whether the Entitlement of this tree has the JWT variables (the harness also runs against older versions). */
export const jwtAuthSupported = () => "ENTITLEMENT_AUTH_JWT_ISSUER" in EntitlementEnv.properties;

/** A provider for the run and the variables that point Entitlement at it (next to its static token). */
export async function startBenchIdp(): Promise<{ idp: TestIdp; env: Record<string, string> }> {
  const idp = await startTestIdp();
  return {
    idp,
    env: { ENTITLEMENT_AUTH_JWT_ISSUER: idp.issuer, ENTITLEMENT_AUTH_JWT_AUDIENCE: IDP_AUDIENCE },
  };
}

export async function measureJwtAuth(args: {
  idp: TestIdp;
  url: string;
  staticHeaders: Record<string, string>;
  connections: number;
  seconds: number;
  rounds: number;
  tag: string;
  /** Waits for the pipeline to go quiet between runs. */
  settle: () => Promise<unknown>;
}): Promise<JwtAuthResult> {
  // Fetched now: the provider's tokens live 10 minutes, longer than the phase.
  const jwtHeaders = { authorization: `Bearer ${await args.idp.token(CLIENTS.payments)}` };
  const rates = { jwt: [] as number[], static: [] as number[] };
  let non2xx = 0;
  const load = (headers: Record<string, string>, tag: string) =>
    runGrantLoad({ url: args.url, headers, connections: args.connections, seconds: args.seconds, tag });
  // The first JWT request fetches the provider's keys; a warm-up keeps that out of the figure.
  await load(jwtHeaders, `${args.tag}-jwt-warm`);
  for (let round = 0; round < args.rounds; round++) {
    for (const mode of round % 2 === 0 ? (["static", "jwt"] as const) : (["jwt", "static"] as const)) {
      await args.settle();
      const result = await load(mode === "jwt" ? jwtHeaders : args.staticHeaders, `${args.tag}-${mode}`);
      non2xx += result.non2xx;
      rates[mode].push(result.rps);
    }
  }
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  const jwt = mean(rates.jwt);
  const staticRate = mean(rates.static);
  return { jwt, static: staticRate, ratio: jwt / staticRate, rounds: args.rounds, non2xx };
}
