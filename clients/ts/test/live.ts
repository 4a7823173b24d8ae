/**
 * The live Quiver the tests run against, from the environment that
 * tests/ts_client/ (pytest) sets: a gunicorn serving the API and /mcp on the
 * test database, a catalog whose `weather.*` tools come from a real upstream
 * MCP server, and the keys made for each test.
 */

import { writeFileSync } from "node:fs";

/** An environment variable the pytest side must set. */
export function env(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(
      `${name} is not set: run these tests through pytest (tests/ts_client)`,
    );
  }
  return value;
}

export const url = (): string => env("QUIVER_URL");
export const key = (): string => env("QUIVER_API_KEY");

/** Write what the pytest side checks against the audit log (QUIVER_TS_REPORT). */
export function report(data: unknown): void {
  const path = process.env["QUIVER_TS_REPORT"];
  if (path) {
    writeFileSync(path, JSON.stringify(data, null, 2));
  }
}

/**
 * A person approves (or denies) an approval through the API with their
 * session, as the Approvals page would: the session cookie comes from pytest
 * (QUIVER_APPROVER_SESSION), the CSRF token is any 32 characters sent twice.
 */
export async function decide(
  approvalId: string,
  decision: "approve" | "deny",
  reason = "",
): Promise<Response> {
  const csrf = "a".repeat(32);
  return fetch(`${url()}/api/v1/approvals/${approvalId}/${decision}`, {
    method: "POST",
    headers: {
      Cookie: `${env("QUIVER_APPROVER_SESSION")}; csrftoken=${csrf}`,
      "X-CSRFToken": csrf,
      "Content-Type": "application/json",
    },
    body: JSON.stringify(reason ? { reason } : {}),
  });
}
