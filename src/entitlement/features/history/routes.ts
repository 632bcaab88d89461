// GET /v1/users/{user_id}/entitlements/{stock_keeping_unit}/history (read scope): the audit log of one entitlement.
import { Type } from "@sinclair/typebox";
import { Elysia } from "elysia";
import { scopeMacro } from "../../../shared/auth/scope.ts";
import { ERRORS } from "../../edge/api-doc.ts";
import { throughGate } from "../../edge/route-deps.ts";
import type { RouteDeps } from "../commands/run.ts";
import { ItemParams } from "../entitlements/model.ts";
import { checkUserPath } from "../entitlements/validation.ts";
import { HistoryResponse } from "./model.ts";
import { decodeCursor, LimitQuery, MAX_LIMIT, parseLimit } from "./paging.ts";
import { readHistory } from "./service.ts";

const HistoryQuery = Type.Object({
  limit: LimitQuery(`Changes per page, 1–${MAX_LIMIT} (default 100).`),
  cursor: Type.Optional(Type.String({ description: "The next_cursor of the previous page." })),
});

const HISTORY_PATH = "/v1/users/:user_id/entitlements/:stock_keeping_unit/history";

export function historyRoutes(deps: RouteDeps) {
  return new Elysia({ name: "history-routes", strictPath: true }).use(scopeMacro).get(
    HISTORY_PATH,
    ({ params, query }) => {
      const args = {
        userId: params.user_id,
        sku: params.stock_keeping_unit,
        limit: parseLimit(query.limit),
        afterAuditId: decodeCursor(query.cursor),
      };
      return throughGate(deps, () => readHistory(deps.sql, args));
    },
    {
      scope: "read",
      transform: checkUserPath(HISTORY_PATH),
      params: ItemParams,
      query: HistoryQuery,
      response: { 200: HistoryResponse, ...ERRORS },
      detail: {
        operationId: "entitlementHistory",
        summary: "The history of one entitlement from the audit log, newest first, paged",
        tags: ["entitlements"],
      },
    },
  );
}
