/**
 * Errors: every API error carries the server's `error`, `detail` and `fields`
 * (Quiver's error envelope), as the Python client's do.
 */

/** Base of every error this package throws. */
export class QuiverError extends Error {
  override name = "QuiverError";
}

/** The server could not be reached (refused, reset, DNS), or answered no JSON. */
export class QuiverConnectionError extends QuiverError {
  override name = "QuiverConnectionError";
}

/** The request took longer than the client's `timeout`. */
export class QuiverTimeout extends QuiverConnectionError {
  override name = "QuiverTimeout";
}

/** A pending approval's answer (`status: "pending_approval"`). */
export interface PendingApprovalAnswer {
  status: "pending_approval";
  approval_id: string;
  tool?: string;
  outcome?: string;
  reason?: string;
  is_error?: boolean;
  structured_content?: Record<string, unknown> | null;
  [field: string]: unknown;
}

/**
 * `call()` of a tool that needs a person's approval: nothing ran. Send the same
 * call again with `approval_id` once a person approved it; `answer` is the
 * server's whole answer.
 */
export class PendingApproval extends QuiverError {
  override name = "PendingApproval";
  readonly approvalId: string;
  readonly tool: string;

  constructor(readonly answer: PendingApprovalAnswer) {
    super(`pending_approval ${answer.approval_id}: ${answer.reason ?? ""}`);
    this.approvalId = String(answer.approval_id ?? "");
    this.tool = String(answer.tool ?? "");
  }
}

/**
 * `waitForApproval` gave up: no decision came within its `timeout`. The
 * approval may still be decided later (until it expires); `status` is the last
 * one seen (`pending`).
 */
export class ApprovalTimeout extends QuiverError {
  override name = "ApprovalTimeout";

  constructor(
    readonly approvalId: string,
    readonly status: string = "pending",
  ) {
    super(`approval ${approvalId}: still ${status} when the wait ended`);
  }
}

export interface APIErrorInit {
  status: number;
  error: string;
  detail: string;
  fields?: Record<string, unknown>;
  retryAfter?: number | undefined;
  requestId?: string | undefined;
  body?: unknown;
  retryable?: boolean;
}

/**
 * A 4xx or 5xx answer. `error` is the server's code (`invalid`,
 * `not_authenticated`, `permission_denied`, `not_found`, `throttled`,
 * `unavailable`...), `detail` names the field and the rule, `fields` maps each
 * field to its messages (empty when the error is about no field). `retryable`
 * is the server's word that sending the request again is safe and may succeed
 * (a limit or an outage met before anything was done); the client retries only
 * those. A tool call's `Unavailable` that is not retryable may have run its
 * tool: check `detail` (it names the call) before doing anything again.
 */
export class APIError extends QuiverError {
  override name = "APIError";
  readonly status: number;
  readonly error: string;
  readonly detail: string;
  readonly fields: Record<string, unknown>;
  /** Seconds the server asked to wait (`Retry-After`), if it said. */
  readonly retryAfter: number | undefined;
  readonly requestId: string | undefined;
  /** The decoded JSON body, when there was one. */
  readonly body: unknown;
  /** Whether the server said the request may be sent again (`retryable`). */
  readonly retryable: boolean;

  constructor(init: APIErrorInit) {
    super(`${init.status} ${init.error}: ${init.detail}`);
    this.status = init.status;
    this.error = init.error;
    this.detail = init.detail;
    this.fields = init.fields ?? {};
    this.retryAfter = init.retryAfter;
    this.requestId = init.requestId;
    this.body = init.body;
    this.retryable = init.retryable ?? false;
  }
}

/** 400: bad input; `fields` names each field and its rule. */
export class BadRequest extends APIError {
  override name = "BadRequest";
}

/** 401: no key, or a bad, expired or revoked one. */
export class AuthenticationError extends APIError {
  override name = "AuthenticationError";
}

/** 403: the key may not do this (scope, roles, unsafe tools, a denial). */
export class PermissionDenied extends APIError {
  override name = "PermissionDenied";
}

/**
 * 403 `needs_authorization`: the tool's server acts for each person, and the
 * person the key acts for has not connected their account there (or must
 * connect it again); nothing ran. `authorizationUrl` is where that person
 * connects it (null when the key acts for no person: use a key bound to one);
 * then the same call can be sent again.
 */
export class NeedsAuthorization extends PermissionDenied {
  override name = "NeedsAuthorization";

  get authorizationUrl(): string | null {
    const body = this.body as Record<string, unknown> | undefined;
    const url = body?.["authorization_url"];
    return typeof url === "string" && url ? url : null;
  }
}

/** 404: no such thing, or one this key may not know of. */
export class NotFound extends APIError {
  override name = "NotFound";
}

/** 409: e.g. no source to run a tool, or an approval that does not cover a call. */
export class Conflict extends APIError {
  override name = "Conflict";
}

/** 413: the body is over the server's limit. */
export class PayloadTooLarge extends APIError {
  override name = "PayloadTooLarge";
}

/** 429 (after the client's retries, when it was retryable): `retryAfter` is the server's wait. */
export class RateLimited extends APIError {
  override name = "RateLimited";
}

/**
 * 503: a part of the service is out (`retryable`: retried first, nothing was
 * done), or a call ran but its outcome could not be recorded (not retryable:
 * never sent again).
 */
export class Unavailable extends APIError {
  override name = "Unavailable";
}

/** Any other 5xx. */
export class ServerError extends APIError {
  override name = "ServerError";
}

const BY_STATUS: ReadonlyMap<number, typeof APIError> = new Map([
  [400, BadRequest],
  [401, AuthenticationError],
  [403, PermissionDenied],
  [404, NotFound],
  [409, Conflict],
  [413, PayloadTooLarge],
  [429, RateLimited],
  [503, Unavailable],
]);

/** Error codes whose answer has a class of its own, whatever its status. */
const BY_CODE: ReadonlyMap<string, typeof APIError> = new Map([
  ["needs_authorization", NeedsAuthorization],
]);

/**
 * The error class for an HTTP status of 400 or more (and the envelope's
 * `error` code, when it names a class of its own).
 */
export function errorClass(status: number, error?: string): typeof APIError {
  const byCode = error === undefined ? undefined : BY_CODE.get(error);
  return byCode ?? BY_STATUS.get(status) ?? (status >= 500 ? ServerError : APIError);
}
