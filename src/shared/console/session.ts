// Console sessions, held in this process's memory: the browser keeps only a random id in a cookie, never the API token.
// A session ends after `idleMs` without a request, at sign-out, or when the process restarts (sign in again). Several
// replicas behind one address need sticky sessions, since each knows only its own.
import { randomBytes } from "node:crypto";

export type Notice = { ok: boolean; text: string };

export type Session<P> = {
  id: string;
  principal: P;
  /** The CSRF token every form of this session carries (compared with `sameSecret`). */
  csrf: string;
  lastSeen: number;
  /** Shown once by the next page (post/redirect/get). */
  notice?: Notice;
};

export type SessionStore<P> = {
  create: (principal: P) => Session<P>;
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
  const expired = (s: Session<P>, at: number) => at - s.lastSeen >= options.idleMs;
  return {
    create: (principal) => {
      const at = options.now();
      for (const [id, s] of sessions) if (expired(s, at)) sessions.delete(id);
      // Map order is insertion order and `touch` re-inserts, so the first entry is the one idle the longest.
      while (sessions.size >= max) sessions.delete(sessions.keys().next().value as string);
      const session = { id: randomToken(), principal, csrf: randomToken(), lastSeen: at };
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
