// A postgres.js client that counts the statements run through it: a statement counts when it is awaited, so the calls
// that only build a part of one (a condition, a list) do not.
import type { Sql } from "../../src/shared/db.ts";

export function countingSql(sql: Sql): { sql: Sql; statements: () => number; reset: () => void } {
  let statements = 0;
  const counting = new Proxy(sql, {
    apply(target, self, args) {
      const query = Reflect.apply(target, self, args);
      const then = query.then.bind(query);
      // biome-ignore lint/suspicious/noThenProperty: the query stays a thenable; its await is what is counted
      query.then = (...handlers: Parameters<typeof then>) => {
        statements += 1;
        return then(...handlers);
      };
      return query;
    },
  });
  const reset = () => {
    statements = 0;
  };
  return { sql: counting, statements: () => statements, reset };
}
