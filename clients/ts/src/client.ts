/**
 * `Quiver`: the REST API over `fetch`, with retries of the answers the server
 * marks retryable and a timeout. Its names and answers are the Python client's (`select`,
 * `selectBatch`, `validateToolCalls`, `call`, `listTools`), camel-cased.
 */

import {
  APIError,
  ApprovalTimeout,
  PendingApproval,
  type PendingApprovalAnswer,
  QuiverConnectionError,
  QuiverError,
  QuiverTimeout,
  errorClass,
} from "./errors.js";
import { RetryPolicy, type RetryOptions, parseRetryAfter } from "./retry.js";
import type {
  Approval,
  BatchError,
  CallOptions,
  CanonicalTool,
  Page,
  SelectRequest,
  Selection,
  ToolCallResult,
  ToolCallsValidation,
  ValidateOptions,
  WaitOptions,
} from "./types.js";

export const DEFAULT_CATALOG = "default";
export const USER_AGENT = "quiver-ai-sdk/0.1";
const API = "/api/v1/";
// The answers a poll of an approval (a read) waits out.
const WAIT_STATUSES = new Set([429, 503]);
// Failures where no request reached the server, so a retry cannot run it twice.
const NOT_CONNECTED = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "UND_ERR_CONNECT_TIMEOUT",
]);

export interface QuiverOptions {
  /** The server, e.g. `http://127.0.0.1:8000`. */
  url: string;
  /** An API key (`qv_...`), sent as `Authorization: Bearer`. */
  key?: string;
  /** Seconds before one attempt is given up (30). */
  timeout?: number;
  /** How the answers the server marks retryable are retried. */
  retry?: RetryPolicy | RetryOptions;
  /** Extra headers on every request (a proxy's, a tracing id...). */
  headers?: Record<string, string>;
  /** The `fetch` to use (the global one by default). */
  fetch?: typeof fetch;
}

export interface RequestOptions {
  json?: unknown;
  params?: Record<string, string | number | boolean | undefined>;
  signal?: AbortSignal | undefined;
}

type Attempt =
  { answer: unknown; wait?: undefined } | { wait: number; answer?: undefined };

/** A Quiver client: `new Quiver({ url: "http://127.0.0.1:8000", key })`. */
export class Quiver {
  readonly url: string;
  readonly timeout: number;
  readonly retry: RetryPolicy;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof fetch;

  constructor(options: QuiverOptions) {
    this.url = options.url.replace(/\/+$/, "");
    this.timeout = options.timeout ?? 30;
    this.retry =
      options.retry instanceof RetryPolicy
        ? options.retry
        : new RetryPolicy(options.retry);
    this.#headers = {
      "User-Agent": USER_AGENT,
      Accept: "application/json",
      ...(options.key ? { Authorization: `Bearer ${options.key}` } : {}),
      ...options.headers,
    };
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /**
   * One API call (`path` under `/api/v1/`), retried when the server marks its
   * answer retryable: the decoded JSON answer, or an `APIError`.
   */
  async request<T = unknown>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<T> {
    const call = `${method} ${path}`;
    for (let attempt = 0; ; attempt += 1) {
      const settled = await this.#attempt(call, attempt, method, path, options);
      if (settled.wait === undefined) {
        return settled.answer as T;
      }
      await sleep(settled.wait, options.signal);
    }
  }

  /**
   * `POST /api/v1/select`: `query` (text or an object) or chat `messages`, and
   * any of the API's options (`catalog`, `max_candidates`, `format`...).
   */
  select(request: SelectRequest, signal?: AbortSignal): Promise<Selection> {
    if ((request.query === undefined) === (request.messages === undefined)) {
      throw new TypeError("select: give exactly one of query or messages");
    }
    return this.request<Selection>("POST", "select", { json: request, signal });
  }

  /** `POST /api/v1/select/batch`: one answer or error object per request, in order. */
  async selectBatch(requests: SelectRequest[]): Promise<Array<Selection | BatchError>> {
    const answer = await this.request<{ results: Array<Selection | BatchError> }>(
      "POST",
      "select/batch",
      { json: { requests } },
    );
    return answer.results;
  }

  /** `POST /api/v1/tool-calls/validate`: the model's output as its provider returned it. */
  validateToolCalls(
    output: unknown,
    options: ValidateOptions = {},
  ): Promise<ToolCallsValidation> {
    return this.request<ToolCallsValidation>("POST", "tool-calls/validate", {
      json: { output, ...defined(options) },
    });
  }

  /**
   * `POST /api/v1/tool-calls/execute`: run the tool through Quiver. A result
   * when its server was tried (check `outcome` and `is_error`); `PendingApproval`
   * when a person must approve it first (call again with `approval_id`); a
   * refusal throws the API's error (400 bad arguments, 403 not allowed or
   * denied, 404 unknown, 409 no source or an approval that does not cover it).
   */
  async call(
    name: string,
    args: Record<string, unknown> = {},
    options: CallOptions = {},
  ): Promise<ToolCallResult> {
    const { signal, ...rest } = options;
    const answer = await this.request<ToolCallResult | PendingApprovalAnswer>(
      "POST",
      "tool-calls/execute",
      { json: { name, arguments: args, ...defined(rest) }, signal },
    );
    if ("status" in answer && answer.status === "pending_approval") {
      throw new PendingApproval(answer);
    }
    return answer as ToolCallResult;
  }

  /** `GET /api/v1/tools/`, every page: the tools this key can read. */
  async listTools(
    filters: Record<string, string | number | boolean> = {},
  ): Promise<Array<Record<string, unknown>>> {
    const tools: Array<Record<string, unknown>> = [];
    for (let page = 1; ; page += 1) {
      const answer = await this.request<Page<Record<string, unknown>>>(
        "GET",
        "tools/",
        { params: { ...filters, page } },
      );
      tools.push(...answer.results);
      if (!answer.next) {
        return tools;
      }
    }
  }

  /**
   * The catalog's active tools this key may read, in Quiver's canonical JSON
   * (`GET catalogs/{slug}/export?format=canonical&status=active`).
   */
  async catalogTools(catalog: string = DEFAULT_CATALOG): Promise<CanonicalTool[]> {
    const path = `catalogs/${encodeURIComponent(catalog)}/export`;
    const document = await this.request<{ tools: CanonicalTool[] }>("GET", path, {
      params: { format: "canonical", status: "active" },
    });
    return document.tools;
  }

  /** `GET /api/v1/approvals/{id}`: an approval this key asked for. */
  approval(approvalId: string): Promise<Approval> {
    return this.request<Approval>("GET", `approvals/${encodeURIComponent(approvalId)}`);
  }

  /**
   * Wait for a person to decide a pending call's approval (its id, or the
   * `PendingApproval` thrown by `call`): polls `GET /api/v1/approvals/{id}`
   * with a growing wait (`interval` to `maxInterval` seconds, at least a 429's
   * `Retry-After`) and resolves to the approval once its `status` is
   * `approved`, `denied`, `expired` or `used`; `ApprovalTimeout` after
   * `timeout` seconds.
   */
  async waitForApproval(
    approval: string | PendingApproval,
    options: WaitOptions = {},
  ): Promise<Approval> {
    const approvalId =
      approval instanceof PendingApproval ? approval.approvalId : approval;
    if (!approvalId) {
      throw new TypeError("approvalId: give the id a pending call answered");
    }
    const timeout = options.timeout === undefined ? 600 : options.timeout;
    const deadline = timeout === null ? undefined : Date.now() + timeout * 1000;
    let interval = options.interval ?? 1;
    const maxInterval = Math.max(interval, options.maxInterval ?? 15);
    const path = `approvals/${encodeURIComponent(approvalId)}`;
    let status = "pending";
    for (;;) {
      let retryAfter: number | undefined;
      const polled = await this.#poll(path, options.signal);
      if (polled instanceof APIError) {
        retryAfter = polled.retryAfter;
      } else if (polled !== undefined) {
        status = polled.status;
        if (polled.status !== "pending") {
          return polled;
        }
      }
      let wait = Math.max(interval * (0.9 + Math.random() / 5), retryAfter ?? 0);
      interval = Math.min(maxInterval, interval * 1.5);
      if (deadline !== undefined) {
        const left = (deadline - Date.now()) / 1000;
        if (left <= 0 || (retryAfter !== undefined && retryAfter > left)) {
          throw new ApprovalTimeout(approvalId, status);
        }
        wait = Math.min(wait, left);
      }
      await sleep(wait, options.signal);
    }
  }

  /** One poll: the approval, a 429/503 to wait out, or undefined (no connection). */
  async #poll(
    path: string,
    signal: AbortSignal | undefined,
  ): Promise<Approval | APIError | undefined> {
    let response: Response;
    try {
      response = await this.#send("GET", path, { signal });
    } catch (failure) {
      if (signal?.aborted) {
        throw transportError(`GET ${path}`, failure, signal);
      }
      return undefined;
    }
    if (response.status < 400) {
      return (await decoded(`GET ${path}`, response)) as Approval;
    }
    const error = await apiError(response);
    if (WAIT_STATUSES.has(response.status)) {
      return error;
    }
    throw error;
  }

  async #attempt(
    call: string,
    attempt: number,
    method: string,
    path: string,
    options: RequestOptions,
  ): Promise<Attempt> {
    let response: Response;
    try {
      response = await this.#send(method, path, options);
    } catch (failure) {
      const wait = notConnected(failure)
        ? this.retry.delay(attempt, undefined)
        : undefined;
      if (wait !== undefined) {
        return { wait };
      }
      throw transportError(call, failure, options.signal);
    }
    if (response.status < 400) {
      return { answer: await decoded(call, response) };
    }
    const error = await apiError(response);
    if (error.retryable) {
      const wait = this.retry.delay(attempt, error.retryAfter);
      if (wait !== undefined) {
        return { wait };
      }
    }
    throw error;
  }

  #send(method: string, path: string, options: RequestOptions): Promise<Response> {
    const url = new URL(`${this.url}${API}${path}`);
    for (const [name, value] of Object.entries(options.params ?? {})) {
      if (value !== undefined) {
        url.searchParams.set(name, String(value));
      }
    }
    const headers = { ...this.#headers };
    let body: string | undefined;
    if (options.json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(options.json);
    }
    const timeout = AbortSignal.timeout(this.timeout * 1000);
    const signal = options.signal
      ? AbortSignal.any([timeout, options.signal])
      : timeout;
    return this.#fetch(url, { method, headers, body, signal });
  }
}

/** The options without their undefined values (the API refuses unknown nulls). */
function defined<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(options).filter(([, value]) => value !== undefined),
  ) as Partial<T>;
}

async function decoded(call: string, response: Response): Promise<unknown> {
  const text = await response.text();
  if (!text) {
    return undefined;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new QuiverConnectionError(`${call}: the answer is not JSON`);
  }
}

/** The error for an error answer, from the API's envelope when it has one. */
export async function apiError(response: Response): Promise<APIError> {
  let body: unknown;
  try {
    body = JSON.parse(await response.text()) as unknown;
  } catch {
    body = undefined;
  }
  const envelope = isObject(body) ? body : {};
  const { error, detail, fields, retryable } = envelope;
  const Class = errorClass(
    response.status,
    typeof error === "string" ? error : undefined,
  );
  return new Class({
    status: response.status,
    error: error ? String(error) : `http_${response.status}`,
    detail: detail ? String(detail) : response.statusText,
    fields: isObject(fields) ? fields : {},
    retryAfter: parseRetryAfter(response.headers.get("Retry-After")),
    requestId: response.headers.get("X-Request-ID") ?? undefined,
    body,
    retryable: retryable === true,
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function notConnected(failure: unknown): boolean {
  const cause = failure instanceof Error ? failure.cause : undefined;
  const code = isObject(cause) ? cause["code"] : undefined;
  return typeof code === "string" && NOT_CONNECTED.has(code);
}

/** A caller's abort as it is; our timeout as `QuiverTimeout`; else a connection error. */
function transportError(
  call: string,
  failure: unknown,
  signal: AbortSignal | undefined,
): Error {
  if (signal?.aborted) {
    return signal.reason instanceof Error ? signal.reason : new QuiverError(call);
  }
  const name = failure instanceof Error ? failure.name : "";
  const message = failure instanceof Error ? failure.message : String(failure);
  if (name === "TimeoutError") {
    return new QuiverTimeout(`${call}: ${message}`, { cause: failure });
  }
  const cause =
    failure instanceof Error && failure.cause instanceof Error
      ? `: ${failure.cause.message}`
      : "";
  return new QuiverConnectionError(`${call}: ${message}${cause}`, { cause: failure });
}

function sleep(seconds: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const timer = setTimeout(resolve, seconds * 1000);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
