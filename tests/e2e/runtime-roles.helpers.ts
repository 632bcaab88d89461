// The PostgreSQL roles of docs/security.md ("PostgreSQL roles"), as a test database gets them: the DBA's statements
// are read from the document itself, so the test runs exactly what an operator is told to run.
import { readFileSync } from "node:fs";

const SERVICES = ["entitlement", "notification"] as const;
export type Service = (typeof SERVICES)[number];
export type Roles = Record<Service, { owner: string; app: string }>;

/** The login roles of one test: the document's names with a suffix (roles are cluster-wide, tests run at once). */
export function rolesFor(suffix: string): Roles {
  const of = (service: Service) => ({ owner: `${service}_owner_${suffix}`, app: `${service}_app_${suffix}` });
  return { entitlement: of("entitlement"), notification: of("notification") };
}

/** The DBA's SQL block of docs/security.md "PostgreSQL roles", as written (database `app`, passwords `'...'`). */
export function documentedRolesSql(): string {
  const doc = readFileSync(new URL("../../docs/security.md", import.meta.url), "utf8");
  const section = doc.slice(doc.indexOf("## PostgreSQL roles"));
  const block = /```sql\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('docs/security.md "PostgreSQL roles" has no sql block');
  return block;
}

/** The statements of the document's SQL block for the roles and database given (comments dropped). */
export function dbaStatements(roles: Roles, database: string): string[] {
  const block = documentedRolesSql();
  const names: Record<string, string> = {};
  for (const service of SERVICES) {
    names[`${service}_owner`] = roles[service].owner;
    names[`${service}_app`] = roles[service].app;
  }
  return block
    .replace(/--.*$/gm, "")
    .replace(/\b(entitlement|notification)_(owner|app)\b/g, (name) => names[name] ?? name)
    .replace(/\bon database app\b/g, `on database "${database}"`)
    .replace(/password '\.\.\.'/g, "password null")
    .split(";")
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The SQLSTATE a statement fails with, or "succeeded". */
export function sqlstate(query: Promise<unknown>): Promise<string | undefined> {
  return query.then(
    () => "succeeded",
    (e: { code?: string }) => e.code,
  );
}

/** Each service's own table and the other's: what its runtime role may and may not touch. */
export const TABLES: Record<Service, { own: string; other: string }> = {
  entitlement: { own: "entitlement.entitlements", other: "notification.notifications" },
  notification: { own: "notification.notifications", other: "entitlement.entitlements" },
};
export { SERVICES };
