// Console sessions, held in this process's memory: the browser keeps only a random id in a cookie, never the token.
// A session ends after `idleMs` without a request, when the credential it was opened with expires (a JWT's exp) or no
// longer verifies (requests.ts asks on every request), at sign-out, when its browser signs in again, or when the process
// restarts (sign in again). Several replicas behind one address need sticky sessions, since each knows only its own.
import { randomBytes } from "node:crypto";
import type { Html } from "./html.ts";

/** The text is Html made with `sentence`, so every id or SKU in it is isolated text. */
export type Notice = { ok: boolean; text: Html };

export type Session<P> = {
  id: string;
  principal: P;
  /** The CSRF token every form of this session carries (compared with `sameSecret`). */
  csrf: string;
  lastSeen: number;
  /** When the credential it was opened with expires (epoch ms); none for a static token. */
  expiresAt?: number;
  /** Shown once by the next page (post/redirect/get). */
  notice?: Notice;
};

export type SessionStore<P> = {
  create: (principal: P, expiresAt?: number) => Session<P>;
  /** The live session of `id`, its idle clock restarted; undefined (and forgotten) once idle too long. */
  touch: (id: string | undefined) => Session<P> | undefined;
  end: (id: string) => void;
  size: () => number;
};

/** 32 random bytes, base64url: a session id, a CSRF token or a form's one-time token. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString("base64url");
}

/**
 * `now` is a clock in milliseconds. At most `maxSessions` live at once: signing in beyond it ends the session idle the
 * longest, so a flood of sign-ins costs memory up to the bound and nothing more.
 */
export function createSessionStore<P>(options: {
  idleMs: number;
  now: () => number;
  maxSessions?: number;
}): SessionStore<P> {
  const sessions = new Map<string, Session<P>>();
  const max = options.maxSessions ?? 10_000;
  const expired = (s: Session<P>, at: number) =>
    at - s.lastSeen >= options.idleMs || (s.expiresAt !== undefined && at >= s.expiresAt);
  return {
    create: (principal, expiresAt) => {
      const at = options.now();
      for (const [id, s] of sessions) if (expired(s, at)) sessions.delete(id);
      // Map order is insertion order and `touch` re-inserts, so the first entry is the one idle the longest.
      while (sessions.size >= max) sessions.delete(sessions.keys().next().value as string);
      const session: Session<P> = { id: randomToken(), principal, csrf: randomToken(), lastSeen: at };
      if (expiresAt !== undefined) session.expiresAt = expiresAt;
      sessions.set(session.id, session);
      return session;
    },
    touch: (id) => {
      const session = id === undefined ? undefined : sessions.get(id);
      if (!session) return undefined;
      const at = options.now();
      sessions.delete(session.id);
      if (expired(session, at)) return undefined;
      session.lastSeen = at;
      sessions.set(session.id, session);
      return session;
    },
    end: (id) => {
      sessions.delete(id);
    },
    size: () => sessions.size,
  };
}
