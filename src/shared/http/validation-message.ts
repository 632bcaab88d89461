// The message of a 400 for input a route's schema refused: the field (`body.event_types[0]`, `query.limit`) and the
// rule it broke (`must be one of EntitlementGranted, …`, `must be an integer from 0 to 9007199254740991`, `is
// required`), read from the first TypeBox error Elysia found. The received value is never part of it: a refused field
// may hold a secret (a webhook URL's token, a device token).
import type { TSchema } from "@sinclair/typebox";
import { type ValueError, ValueErrorType } from "@sinclair/typebox/errors";
import { PLAIN_TEXT_PATTERN } from "../ids.ts";
import { DOCUMENTED_AS } from "./openapi-refine.ts";

/** What of Elysia's ValidationError the message needs: where (`body`, `query`, …) and the first error. */
export type RefusedInput = { type?: unknown; valueError?: ValueError };

const FORMATS: Record<string, string> = {
  uuid: "a UUID",
  "date-time": "an ISO-8601 date-time with offset",
  uri: "a URL",
  email: "an email address",
};
/** A field name as shown: a client's unknown key can be anything, so it is cut, never echoed at length. */
const MAX_SEGMENT = 64;

/** `body` + `/event_types/0` → `body.event_types[0]`. */
export function fieldOf(on: string, pointer: string): string {
  const segments = pointer === "" ? [] : pointer.slice(1).split("/");
  return segments.reduce((field, raw) => {
    const segment = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (/^\d+$/.test(segment)) return `${field}[${segment}]`;
    const shown = segment.length > MAX_SEGMENT ? `${segment.slice(0, MAX_SEGMENT)}…` : segment;
    return /^[A-Za-z_][A-Za-z0-9_-]*$/.test(shown) ? `${field}.${shown}` : `${field}[${JSON.stringify(shown)}]`;
  }, on);
}

/** ` from 1 to 100`; ` of 1 to 64 characters` (a length: `unit`, `of`); ` of at least 1`. */
const range = (min: unknown, max: unknown, unit = "", from = "from"): string => {
  if (min !== undefined && max !== undefined) return ` ${from} ${min} to ${max}${unit}`;
  if (min !== undefined) return ` of at least ${min}${unit}`;
  return max !== undefined ? ` of at most ${max}${unit}` : "";
};

/** The patterns the schemas share, in words; another pattern is shown as it is. */
const PATTERNS: Record<string, string> = {
  [PLAIN_TEXT_PATTERN]: ", not blank and without control characters",
  "\\S": ", not blank",
};

function describeString(s: TSchema): string {
  if (typeof s.format === "string") return FORMATS[s.format] ?? `a string in the ${s.format} format`;
  const min = s.minLength === 0 ? undefined : s.minLength;
  const length = range(min, s.maxLength, " characters", "of");
  const pattern = typeof s.pattern === "string" ? (PATTERNS[s.pattern] ?? ` matching ${s.pattern}`) : "";
  return `a string${length}${pattern}`;
}

/** The schema as the noun phrase a rule ends with: `an integer from 1 to 100`, `one of A, B or C`. */
export function describeSchema(schema: TSchema): string {
  const s: TSchema = schema[DOCUMENTED_AS] ?? schema;
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (Array.isArray(s.anyOf)) {
    const variants = s.anyOf as TSchema[];
    if (variants.every((v) => v.const !== undefined)) return `one of ${variants.map((v) => v.const).join(", ")}`;
    return variants.map(describeSchema).join(" or ");
  }
  switch (s.type) {
    case "integer":
    case "number":
      return `${s.type === "integer" ? "an integer" : "a number"}${range(s.minimum, s.maximum)}`;
    case "string":
      return describeString(s);
    case "boolean":
      return "true or false";
    case "null":
      return "null";
    case "array": {
      const items = s.items ? ` (each ${describeSchema(s.items)})` : "";
      return `an array${range(s.minItems, s.maxItems, " items", "of")}${items}`;
    }
    case "object":
      return Array.isArray(s.required) && s.required.length > 0
        ? `an object with ${s.required.join(", ")}`
        : "an object";
    default:
      return "a valid value";
  }
}

/** Errors that say the input has another shape than the variant (a missing or unexpected property, another type). */
const SHAPE = new Set([ValueErrorType.ObjectRequiredProperty, ValueErrorType.ObjectAdditionalProperties]);
const depth = (e: ValueError): number => (e.path === "" ? 0 : e.path.split("/").length - 1);

/**
 * Of a union's variants, the one the input was meant to be: the fewest shape errors, then the deepest first error (it
 * got furthest). Undefined when two variants tie: the input fits none better, and the union itself is the rule.
 */
function closestVariant(union: ValueError): ValueError | undefined {
  const scored = union.errors
    .map((iterator) => [...iterator])
    .filter((errors) => errors.length > 0)
    .map((errors) => ({
      first: errors[0] as ValueError,
      shape: errors.filter((e) => SHAPE.has(e.type)).length,
      depth: depth(errors[0] as ValueError),
    }))
    .sort((a, b) => a.shape - b.shape || b.depth - a.depth);
  const [best, next] = scored;
  if (!best || (next && next.shape === best.shape && next.depth === best.depth)) return undefined;
  return best.first.path === union.path && best.first.type !== ValueErrorType.Union ? undefined : best.first;
}

/** The error that explains the refusal: down through unions to the variant the input was meant to be. */
function explainingError(error: ValueError): ValueError {
  if (error.type !== ValueErrorType.Union) return error;
  const variant = closestVariant(error);
  return variant ? explainingError(variant) : error;
}

function rule(error: ValueError): string {
  // A property that is absent is reported by some checks as of the wrong type: its value tells them apart (JSON has no
  // undefined, so a present field never has it).
  const missing =
    error.type === ValueErrorType.ObjectRequiredProperty || (error.value === undefined && error.path !== "");
  if (missing) return `is required (${describeSchema(error.schema)})`;
  switch (error.type) {
    case ValueErrorType.ObjectAdditionalProperties:
      return "is not a field of this request";
    case ValueErrorType.ArrayUniqueItems:
      return "must not repeat an item";
    default:
      return `must be ${describeSchema(error.schema)}`;
  }
}

/** `body.event_types[0]: must be one of …`; `body: is invalid` when Elysia gave no error to read. */
export function validationMessage(refused: RefusedInput): string {
  const on = typeof refused.type === "string" && refused.type !== "" ? refused.type : "request";
  if (!refused.valueError) return `${on}: is invalid`;
  const error = explainingError(refused.valueError);
  return `${fieldOf(on, error.path)}: ${rule(error)}`;
}
