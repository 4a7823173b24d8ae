/**
 * How the answers the server marks `"retryable": true` (a limit or an outage
 * met before anything was done) and connections never made are retried, as the
 * Python client's `RetryPolicy`: the server's `Retry-After` when it sends one,
 * else an exponential backoff with up to 10% jitter. Nothing else is sent
 * again: never a tool call whose tool may have run (the server answers that
 * `"retryable": false`).
 */

export interface RetryOptions {
  /** Retries after the first attempt (3). */
  maxRetries?: number;
  /** Seconds before the first retry, doubled each time (0.5). */
  backoff?: number;
  /** The longest backoff, in seconds (8). */
  maxBackoff?: number;
  /** A `Retry-After` longer than this many seconds is not waited for (60). */
  maxWait?: number;
}

export class RetryPolicy {
  readonly maxRetries: number;
  readonly backoff: number;
  readonly maxBackoff: number;
  readonly maxWait: number;

  constructor(options: RetryOptions = {}) {
    this.maxRetries = options.maxRetries ?? 3;
    this.backoff = options.backoff ?? 0.5;
    this.maxBackoff = options.maxBackoff ?? 8;
    this.maxWait = options.maxWait ?? 60;
  }

  /** Seconds to wait before retry `attempt` (0-based), or undefined to give up. */
  delay(attempt: number, retryAfter: number | undefined): number | undefined {
    if (attempt >= this.maxRetries) {
      return undefined;
    }
    if (retryAfter !== undefined) {
      return retryAfter <= this.maxWait ? retryAfter : undefined;
    }
    const wait = Math.min(this.maxBackoff, this.backoff * 2 ** attempt);
    return wait * (1 + Math.random() / 10);
  }
}

/** `Retry-After` as seconds: a number, or an HTTP date from now. */
export function parseRetryAfter(value: string | null): number | undefined {
  const text = value?.trim();
  if (!text) {
    return undefined;
  }
  const seconds = Number(text);
  if (Number.isFinite(seconds)) {
    return Math.max(0, seconds);
  }
  const when = Date.parse(text);
  return Number.isNaN(when) ? undefined : Math.max(0, (when - Date.now()) / 1000);
}
