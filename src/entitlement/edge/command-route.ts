// One idempotent command: POST, `write` scope, an Idempotency-Key. The key is checked first of all input
// (docs/api.md), then the body (or the path) by the command's own reader, so every bad request gets its precise
// `{code, message}` before anything runs; the command then runs through the gate, as one call of its database
// function, and its reply (stored with the key, replayed on a retry) is answered as rendered. Grants, revokes, bundle
// grants, extensions and the points commands are each one `commandRoute`; a new command is one more.
import type { TSchema } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { scopeMacro } from "../../shared/auth/scope.ts";
import { COMMAND_ERRORS } from "./api-doc.ts";
import { CommandHeaders, checkIdempotencyKey, traceIdOf } from "./headers.ts";
import { type EdgeDeps, throughGate } from "./route-deps.ts";

/** What a command's service receives: the checked body (or path), the key, the trace id and the caller's name. */
export type CommandInput<B> = { body: B; idempotencyKey: string; traceId: string; caller: string };

export type CommandRouteSpec<B> = {
  path: string;
  operationId?: string;
  summary: string;
  tags?: string[];
  /**
   * Reads and checks the command's input (400, 413 or 415 as an ApiError); runs after the Idempotency-Key check. With
   * `body`, the request body; without, the path (a command without a body, whose `params` say what it takes).
   */
  read: (request: Request) => Promise<B> | B;
  /** The request body (or the path parameters) and the success reply, for /openapi.json. */
  body?: TSchema;
  params?: TSchema;
  response: TSchema;
  /** The success status (default 200) and the error responses (default COMMAND_ERRORS). */
  status?: number;
  errors?: Record<number, TSchema>;
  /** Runs the command (the gate is around it) and returns the reply to answer. */
  execute: (command: CommandInput<B>) => Promise<{ status: number; body: unknown }>;
  /** The reply's JSON text, with its keys in the documented order (docs/api.md). */
  render: (status: number, body: unknown) => string;
};

export function commandRoute<B>(deps: Pick<EdgeDeps, "log" | "callerOf" | "gate">, spec: CommandRouteSpec<B>) {
  // The parser (or, without a body, the transform) checks the key and reads the input, so each is read once.
  const keys = new WeakMap<Request, string>();
  const inputs = new WeakMap<Request, B>();
  const readInput = async (request: Request) => {
    keys.set(request, checkIdempotencyKey(request.headers));
    return spec.read(request);
  };
  const input = spec.body
    ? {
        // The first parser always returns the checked body or throws; "json" after it never runs and is there so
        // that /openapi.json lists application/json as the request media type.
        parse: [({ request }: { request: Request }) => readInput(request), "json" as const],
        body: spec.body,
      }
    : {
        // No body to read: whatever is sent is ignored. The path is checked before its schema is, and its checked
        // values (`read` returns them) replace the raw ones.
        parse: () => ({}),
        transform: async ({ request, params }: { request: Request; params: Record<string, string> }) => {
          const checked = await readInput(request);
          inputs.set(request, checked);
          Object.assign(params, checked);
        },
        params: spec.params,
      };
  return new Elysia({ name: `command ${spec.path}`, strictPath: true }).use(scopeMacro).post(
    spec.path,
    async ({ body, request }) => {
      const command = {
        body: spec.body ? (body as B) : (inputs.get(request) as B),
        idempotencyKey: keys.get(request) ?? checkIdempotencyKey(request.headers),
        traceId: traceIdOf(request.headers),
        caller: deps.callerOf(request),
      };
      const reply = await throughGate(deps, () => spec.execute(command));
      return new Response(spec.render(reply.status, reply.body), {
        status: reply.status,
        headers: { "content-type": "application/json" },
      });
    },
    {
      scope: "write",
      ...input,
      headers: CommandHeaders,
      response: { [spec.status ?? 200]: spec.response, ...(spec.errors ?? COMMAND_ERRORS) },
      detail: {
        ...(spec.operationId ? { operationId: spec.operationId } : {}),
        summary: spec.summary,
        tags: spec.tags ?? ["entitlements"],
      },
    },
  );
}
