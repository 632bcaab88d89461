// HTML built from tagged templates: every interpolated value is escaped unless it is already `Html` (the output of
// another `html` template), so a page cannot forget to escape. Ids hold any printable Unicode, bidi controls included:
// `text` wraps such a value in <bdi> so a right-to-left override inside it cannot reorder the text around it, and
// `sentence` does so for every value of a notice.

/** Markup that is already safe: only `html` and `text` make it. */
export class Html {
  constructor(readonly markup: string) {}
  toString(): string {
    return this.markup;
  }
}

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** The one escaping helper: the five characters that end a text node or an attribute value. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (ch) => ENTITIES[ch] ?? ch);
}

type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value instanceof Html) return value.markup;
  if (Array.isArray(value)) return value.map(render).join("");
  if (value === null || value === undefined || value === false) return "";
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? "");
  });
  return new Html(out);
}

/** A value from outside (an id, a reason, an error message) as isolated text. */
export function text(value: string | null | undefined): Html {
  return value === null || value === undefined ? html`<span class="none">none</span>` : html`<bdi>${value}</bdi>`;
}

/**
 * A sentence around values from outside, for a notice or a message: every interpolated string is isolated text (`text`),
 * so an id with a right-to-left override reorders nothing around it; numbers and Html go in as they are.
 */
export function sentence(
  strings: TemplateStringsArray,
  ...values: (Html | string | number | null | undefined)[]
): Html {
  return html(strings, ...values.map((v) => (typeof v === "number" || v instanceof Html ? v : text(v))));
}

/** A console path with its query, for an href or a redirect; values are percent-encoded. */
export function consoleHref(path: string, query: Record<string, string | undefined> = {}): string {
  const pairs = Object.entries(query).filter((pair): pair is [string, string] => pair[1] !== undefined);
  return pairs.length === 0 ? path : `${path}?${new URLSearchParams(pairs).toString()}`;
}
