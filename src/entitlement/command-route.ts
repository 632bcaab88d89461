// One idempotent command: POST, `write` scope, an Idempotency-Key. The key is checked first of all input
// (CONTRACT §3.1), then the body by the command's own reader, both in the parser, so every bad request gets its precise
// `{code, message}` before anything runs; the command then runs through the gate, in its own transaction, and its
// reply (stored with the key, replayed on a retry) is answered as rendered. Grants, revokes, bundle grants and
// extensions are each one `commandRoute`; a new command is one more.
import type { TSchema } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { COMMAND_ERRORS } from "./api-doc.ts";
import { scopeMacro } from "./auth/scope.ts";
import { CommandHeaders } from "./entitlements/model.ts";
import { checkIdempotencyKey, traceIdOf } from "./entitlements/validation.ts";
import { type RouteDeps, unavailableOr } from "./route-deps.ts";

/** What a command's service receives: the checked body, the key, the trace id and the caller's name. */
export type CommandInput<B> = { body: B; idempotencyKey: string; traceId: string; caller: string };

export type CommandRouteSpec<B> = {
  path: string;
  operationId: string;
  summary: string;
  /** Reads and checks the body (400, 413 or 415 as an ApiError); runs after the Idempotency-Key check. */
  read: (request: Request) => Promise<B>;
  /** The request body and the 200 reply, for /openapi.json. */
  body: TSchema;
  response: TSchema;
  /** Runs the command in its transaction (the gate is around it) and returns the reply to answer. */
  execute: (command: CommandInput<B>) => Promise<{ status: number; body: unknown }>;
  /** The reply's JSON text, with the keys of the contract in their order. */
  render: (status: number, body: unknown) => string;
};

export function commandRoute<B>(deps: Pick<RouteDeps, "log" | "callerOf" | "gate">, spec: CommandRouteSpec<B>) {
  // The parser checks the key and hands it to the handler, so it is checked once per request.
  const keys = new WeakMap<Request, string>();
  return new Elysia({ name: `command ${spec.path}`, strictPath: true }).use(scopeMacro).post(
    spec.path,
    async ({ body, request }) => {
      const command = {
        body: body as B,
        idempotencyKey: keys.get(request) ?? checkIdempotencyKey(request.headers),
        traceId: traceIdOf(request.headers),
        caller: deps.callerOf(request),
      };
      const reply = await deps.gate.run(() => spec.execute(command)).catch((error) => unavailableOr(deps, error));
      return new Response(spec.render(reply.status, reply.body), {
        status: reply.status,
        headers: { "content-type": "application/json" },
      });
    },
    {
      scope: "write",
      // The first parser always returns the checked body or throws; "json" after it never runs and is there so that
      // /openapi.json lists application/json as the request media type.
      parse: [
        async ({ request }) => {
          keys.set(request, checkIdempotencyKey(request.headers));
          return spec.read(request);
        },
        "json" as const,
      ],
      body: spec.body,
      headers: CommandHeaders,
      response: { 200: spec.response, ...COMMAND_ERRORS },
      detail: { operationId: spec.operationId, summary: spec.summary, tags: ["entitlements"] },
    },
  );
}
