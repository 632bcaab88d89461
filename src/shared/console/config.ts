// The variables of a service's console (`<PREFIX>_CONSOLE_*`), declared once for both services as consumerVariables
// declares a consumer's: on/off, the idle timeout of a session, and whether cookies are always Secure.
import { Bool, Duration } from "../config.ts";

export function consoleVariables<P extends string>(prefix: P, signIn: string) {
  return {
    [`${prefix}_CONSOLE_ENABLED`]: Bool(false, {
      description: `Serve the support console at /console (sign-in with ${signIn}).`,
    }),
    [`${prefix}_CONSOLE_IDLE_TIMEOUT`]: Duration("15m", {
      minimum: 1000,
      description: "A console session ends after this long without a request.",
    }),
    [`${prefix}_CONSOLE_SECURE_COOKIE`]: Bool(false, {
      description:
        "Always mark the console's cookies Secure (TLS ends at a proxy that sets no X-Forwarded-Proto); they are " +
        "Secure anyway when the request is https or X-Forwarded-Proto says https.",
    }),
  } as Record<`${P}_CONSOLE_ENABLED` | `${P}_CONSOLE_SECURE_COOKIE`, ReturnType<typeof Bool>> &
    Record<`${P}_CONSOLE_IDLE_TIMEOUT`, ReturnType<typeof Duration>>;
}

export type ConsoleSettings = { enabled: boolean; idleMs: number; alwaysSecure: boolean };

export function consoleSettings<P extends string>(
  prefix: P,
  e: Record<`${P}_CONSOLE_ENABLED` | `${P}_CONSOLE_SECURE_COOKIE`, boolean> &
    Record<`${P}_CONSOLE_IDLE_TIMEOUT`, number>,
): ConsoleSettings {
  const get = (name: string) => (e as unknown as Record<string, unknown>)[`${prefix}_CONSOLE_${name}`];
  return {
    enabled: get("ENABLED") === true,
    idleMs: Number(get("IDLE_TIMEOUT")),
    alwaysSecure: get("SECURE_COOKIE") === true,
  };
}
