// A call of one of the database's functions by named arguments, each a name, a type and a value: the statement's text
// is made once for a function and its arguments' names and types, then only the values travel, as a prepared
// statement. The call used to be built of nested tagged-template fragments, which postgres.js makes into query objects
// and stringifies again at every call: about 10 µs of user CPU a grant's call more (docs/benchmarks.md, "The grant's
// call, trimmed on both sides").
import type { ParameterOrJSON } from "postgres";
import type { Db } from "../../shared/db.ts";

/** A composite argument, `row($n::t1, …)::type`: its fields' types and values in the type's order. */
export class Fields {
  constructor(readonly fields: readonly (readonly [type: string, value: unknown])[]) {}
}

/**
 * One named argument, `name => $n::type`. postgres.js serializes each value by the type PostgreSQL describes for its
 * parameter, the cast's: a `jsonb` value is the JSON value itself, not its text.
 */
export type Arg = readonly [name: string, type: string, value: unknown];

/** The statement texts made so far, by template and arguments (a few per service). */
const texts = new Map<string, string>();

/**
 * Runs `template` with `$args` replaced by the named arguments, prepared. `template` is a constant of the caller's
 * with the function's name in it, never a value from a request.
 */
export function callFunction<T extends object[]>(db: Db, template: string, args: readonly Arg[]): Promise<T> {
  const { text, values } = functionStatement(template, args);
  return db.unsafe<T>(text, values, { prepare: true });
}

/**
 * `template` with `$args` replaced by the named arguments, numbered from $1, and their values in that order.
 */
export function functionStatement(
  template: string,
  args: readonly Arg[],
): { text: string; values: ParameterOrJSON<never>[] } {
  let key = template;
  const values: unknown[] = [];
  for (const [name, type, value] of args) {
    key += `|${name}:${type}`;
    if (value instanceof Fields) {
      for (const [fieldType, fieldValue] of value.fields) {
        key += `,${fieldType}`;
        values.push(fieldValue);
      }
    } else {
      values.push(value);
    }
  }
  let text = texts.get(key);
  if (text === undefined) {
    let n = 0;
    const list = args.map(([name, type, value]) => {
      if (!(value instanceof Fields)) return `${name} => $${++n}::${type}`;
      return `${name} => row(${value.fields.map(([fieldType]) => `$${++n}::${fieldType}`).join(", ")})::${type}`;
    });
    text = template.replace("$args", list.join(",\n  "));
    texts.set(key, text);
  }
  return { text, values: values as ParameterOrJSON<never>[] };
}
