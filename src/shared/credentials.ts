// Credentials inside URL-like values (DATABASE_URL, NATS_URL, a webhook or OTLP endpoint): hidden before a value is
// printed in a configuration problem, a log line or an operator subcommand's error.

/** A `password` query parameter and everything after it: an unencoded `&` or `#` in the password must not end it. */
const PASSWORD_PARAMETER = /([?&]password=)[\s\S]*$/i;
/** A scheme and its `//` at the very start; a `//` further on may be part of a password. */
const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * The value with its credentials replaced by `***`, whatever characters they hold. A password may hold `/`, `?`, `#`,
 * `:`, `,` or `@` unencoded, so no character is taken to end it: everything from the scheme's `//` (or the start, for a
 * value without a scheme) to the last `@` goes, and so does everything from a `password=` parameter on. A value
 * without `@` or `password=` holds no credentials and is returned as it is. Over-hiding (a host after an earlier
 * server's `@` in a comma-separated list) is the price of never printing a secret.
 */
export function hideCredentials(value: string): string {
  const hidden = value.replace(PASSWORD_PARAMETER, "$1***");
  const at = hidden.lastIndexOf("@");
  if (at < 0) return hidden;
  const start = SCHEME.exec(hidden)?.[0].length ?? 0;
  return `${hidden.slice(0, start)}***${hidden.slice(at)}`;
}
