// Matching a request path against an Elysia route pattern before (or without) Elysia's own router: the 405 reply and
// a service's edge checks need to know which route a path belongs to.
const patterns = new Map<string, RegExp>();

/** The matcher of a route pattern (`/v1/users/:user_id/entitlements`), built once per pattern. */
export function routePattern(path: string): RegExp {
  let pattern = patterns.get(path);
  if (!pattern) {
    const body = path
      .split("/")
      .map((part) => (part.startsWith(":") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      .join("/");
    pattern = new RegExp(`^${body}$`);
    patterns.set(path, pattern);
  }
  return pattern;
}
