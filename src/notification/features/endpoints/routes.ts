// The endpoints admin API (docs/api.md), mounted only when NOTIFICATION_AUTH_TOKENS is set. Each route declares its
// scope (shared/auth/scope.ts): the edge (app.ts) authenticates and checks it before anything else is read.
import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { scopeMacro } from "../../../shared/auth/scope.ts";
import { errorSchema, unavailableOr } from "../../../shared/http/errors.ts";
import { parseLimit } from "../../../shared/http/paging.ts";
import { pathParam } from "../../../shared/http/path.ts";
import {
  AttemptList,
  CreatedEndpoint,
  CreateEndpointBody,
  Endpoint,
  EndpointList,
  EndpointParams,
  PageQuery,
  PatchEndpointBody,
  ReplayAccepted,
  ReplayBody,
  RotateBody,
  RotatedSecret,
} from "./model.ts";
import {
  changeEndpoint,
  checkEndpointId,
  checkEventTypes,
  createEndpoint,
  type EndpointServiceDeps,
  getEndpoint,
  listAttemptPage,
  listEndpointPage,
  removeEndpoint,
  replay,
  rotateSecret,
} from "./service.ts";

const COLLECTION = "/v1/webhook-endpoints";
const ONE = `${COLLECTION}/:endpoint_id`;
const ROTATE = `${ONE}/secret/rotate`;
const ATTEMPTS = `${ONE}/attempts`;
const REPLAY = `${ONE}/replay`;

const TAGS = ["webhook endpoints"];
/** What each operation's detail adds: its tag and the admin token it needs. */
const DOC = { tags: TAGS, security: [{ adminToken: [] }] };
const BAD = errorSchema("BAD_REQUEST: a field is missing, malformed or out of bounds");
const URL_REFUSED = errorSchema(
  "BAD_REQUEST: the body is malformed; ENDPOINT_URL_NOT_ALLOWED: the URL is not http(s), carries user info, or its host is or resolves to a loopback, private, link-local or unspecified address",
);
const MISSING = errorSchema("NOT_FOUND: no endpoint has this id");
/** What every admin route may answer besides its own outcomes. */
const ADMIN_ERRORS = {
  401: errorSchema("UNAUTHORIZED: no bearer token, or one that is not in NOTIFICATION_AUTH_TOKENS"),
  403: errorSchema("FORBIDDEN: the token lacks the route's scope (read for GET, write for the rest)"),
  413: errorSchema("PAYLOAD_TOO_LARGE: the body is declared over 16 KiB"),
  503: errorSchema("NOT_READY: the database is unavailable, retry after Retry-After"),
};

/** A database that cannot be reached is 503 with Retry-After, as everywhere else, never a 500. */
const run = <T>(work: Promise<T>) => work.catch(unavailableOr);

/** The endpoint id of a request to `pattern`, decoded strictly. */
const idOf = (request: Request, pattern: string) => checkEndpointId(pathParam(request, pattern, "endpoint_id"));

/** Register and list. */
function endpointCollectionRoutes(deps: EndpointServiceDeps) {
  return new Elysia({ name: "webhook-endpoint-routes", strictPath: true })
    .use(scopeMacro)
    .post(
      COLLECTION,
      async ({ body, set }) => {
        const created = await run(createEndpoint(deps, body));
        set.status = 201;
        return created;
      },
      {
        scope: "write",
        transform: ({ body }) => checkEventTypes(body),
        body: CreateEndpointBody,
        response: { ...ADMIN_ERRORS, 201: CreatedEndpoint, 400: URL_REFUSED },
        detail: {
          operationId: "createWebhookEndpoint",
          summary: "Register a webhook endpoint (its secret is shown once)",
          ...DOC,
        },
      },
    )
    .get(
      COLLECTION,
      ({ query }) => run(listEndpointPage(deps, { limit: parseLimit(query.limit), cursor: query.cursor })),
      {
        scope: "read",
        query: PageQuery,
        response: { ...ADMIN_ERRORS, 200: EndpointList, 400: BAD },
        detail: {
          operationId: "listWebhookEndpoints",
          summary: "The webhook endpoints, oldest first, paged",
          ...DOC,
        },
      },
    );
}

/** Read, change and delete one endpoint. */
function endpointItemRoutes(deps: EndpointServiceDeps) {
  return new Elysia({ name: "webhook-endpoint-item-routes", strictPath: true })
    .use(scopeMacro)
    .get(ONE, ({ request }) => run(getEndpoint(deps, idOf(request, ONE))), {
      scope: "read",
      params: EndpointParams,
      response: { ...ADMIN_ERRORS, 200: Endpoint, 404: MISSING },
      detail: { operationId: "getWebhookEndpoint", summary: "One webhook endpoint, without its secret", ...DOC },
    })
    .patch(ONE, ({ request, body }) => run(changeEndpoint(deps, idOf(request, ONE), body)), {
      scope: "write",
      params: EndpointParams,
      transform: ({ body }) => checkEventTypes(body),
      body: PatchEndpointBody,
      response: { ...ADMIN_ERRORS, 200: Endpoint, 400: URL_REFUSED, 404: MISSING },
      detail: {
        operationId: "changeWebhookEndpoint",
        summary: "Change an endpoint's url, description, event types or enabled (enabling again sends what waited)",
        ...DOC,
      },
    })
    .delete(
      ONE,
      async ({ request, set }) => {
        await run(removeEndpoint(deps, idOf(request, ONE)));
        set.status = 204;
        return null;
      },
      {
        scope: "write",
        params: EndpointParams,
        response: { ...ADMIN_ERRORS, 204: Type.Null({ description: "Deleted: no body." }), 404: MISSING },
        detail: {
          operationId: "deleteWebhookEndpoint",
          summary: "Delete an endpoint: nothing more is sent to it",
          ...DOC,
        },
      },
    );
}

/** Rotation, the attempts log and replay. */
function endpointOperationRoutes(deps: EndpointServiceDeps) {
  return new Elysia({ name: "webhook-endpoint-operation-routes", strictPath: true })
    .use(scopeMacro)
    .post(ROTATE, ({ request, body }) => run(rotateSecret(deps, idOf(request, ROTATE), body ?? {})), {
      scope: "write",
      params: EndpointParams,
      body: RotateBody,
      response: { ...ADMIN_ERRORS, 200: RotatedSecret, 400: BAD, 404: MISSING },
      detail: {
        operationId: "rotateWebhookEndpointSecret",
        summary: "A new signing secret; the old one is signed with too until the overlap ends",
        ...DOC,
      },
    })
    .get(
      ATTEMPTS,
      ({ request, query }) =>
        run(listAttemptPage(deps, idOf(request, ATTEMPTS), { limit: parseLimit(query.limit), cursor: query.cursor })),
      {
        scope: "read",
        params: EndpointParams,
        query: PageQuery,
        response: { ...ADMIN_ERRORS, 200: AttemptList, 400: BAD, 404: MISSING },
        detail: {
          operationId: "listWebhookEndpointAttempts",
          summary: "An endpoint's delivery attempts, newest first",
          ...DOC,
        },
      },
    )
    .post(
      REPLAY,
      async ({ request, body, set }) => {
        const accepted = await run(replay(deps, idOf(request, REPLAY), body));
        set.status = 202;
        return accepted;
      },
      {
        scope: "write",
        params: EndpointParams,
        body: ReplayBody,
        response: { ...ADMIN_ERRORS, 202: ReplayAccepted, 400: BAD, 404: MISSING },
        detail: {
          operationId: "replayWebhookEndpoint",
          summary: "Send the notifications of a time window to the endpoint again, with their original webhook-id",
          ...DOC,
        },
      },
    );
}

export function endpointRoutes(deps: EndpointServiceDeps) {
  return new Elysia({ name: "webhook-endpoint-routes" })
    .use(endpointCollectionRoutes(deps))
    .use(endpointItemRoutes(deps))
    .use(endpointOperationRoutes(deps));
}
