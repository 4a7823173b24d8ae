/**
 * The requests and answers of a Quiver server, typed. Field names are the API's
 * (`selection/api/serializers.py`), as the Python client's typed dictionaries;
 * a newer server may add fields, which stay on the objects.
 */

export type Format =
  "canonical" | "openai" | "openai-responses" | "anthropic" | "ollama" | "mcp";

export type CallFormat = Exclude<Format, "canonical">;

export type Scorer = "keyword" | "bm25f" | "embedding" | "hybrid" | "ensemble" | "llm";

/** One turn of an OpenAI-style chat, as `POST select` reads `messages`. */
export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool" | (string & {});
  content?: string | Array<{ type: string; text?: string }> | null;
  tool_calls?: Array<{
    id?: string;
    type?: "function";
    function: { name: string; arguments?: string };
  }>;
  tool_call_id?: string;
  [field: string]: unknown;
}

/** The options of `POST select` besides `query` / `messages`. */
export interface SelectOptions {
  catalog?: string;
  max_candidates?: number;
  min_score?: number;
  scorer?: Scorer;
  allow_unsafe?: boolean;
  roles?: string[];
  categories?: string[];
  allow_tools?: string[];
  block_tools?: string[];
  max_cost_per_call?: number;
  max_total_tokens?: number;
  require_capabilities?: string[];
  recent_tools?: string[];
  format?: Format;
  explain?: boolean;
  timeout_ms?: number;
}

/** The body of `POST select`: exactly one of `query` and `messages`. */
export type SelectRequest = SelectOptions &
  (
    | { query: string | Record<string, unknown>; messages?: never }
    | { messages: ChatMessage[]; query?: never }
  );

/** One selected tool: `definition` is in the format the request asked for. */
export interface Pick {
  name: string;
  score: number;
  reason: string;
  signals: Record<string, number>;
  requires_approval: boolean;
  core: boolean;
  exploration: boolean;
  definition: Record<string, unknown>;
}

export interface Exclusion {
  name: string;
  stage: "policy" | "rank";
  reason: string;
  detail: string;
  score: number | null;
}

/** Why no tool was offered (`tools` is then empty). */
export interface NoTool {
  reason:
    "below_no_tool_threshold" | "learnt_no_tool" | "below_min_score" | "no_candidates";
  best_score: number | null;
  threshold: number | null;
  probability?: number;
  nearest_no_tool?: number;
  nearest_tool?: number;
}

/** The answer of `POST /api/v1/select`. */
export interface Selection {
  selection_id: string;
  request_id: string | null;
  catalog: string;
  catalog_version: number;
  settings_version: number;
  scorer: string;
  tools: Pick[];
  excluded?: Exclusion[];
  stats: Record<string, unknown>;
  cached: boolean;
  degraded: boolean;
  fallback_reason: string;
  no_tool: NoTool | null;
  /** Ranked by words alone: the catalog's tool embeddings are not ready. */
  words_only: boolean;
  words_only_reason: string;
}

/** A batch item that failed: the API's error envelope, in the item's place. */
export interface BatchError {
  error: string;
  detail: string;
  fields?: Record<string, unknown>;
}

export interface CallError {
  pointer: string;
  rule: string;
  message: string;
}

export interface CheckedCall {
  tool: string;
  call_id: string | null;
  valid: boolean;
  errors: CallError[];
  flags: string[];
  arguments?: unknown;
  hint: string;
  tool_version: number | null;
}

/** The answer of `POST /api/v1/tool-calls/validate`. */
export interface ToolCallsValidation {
  validation_id: string;
  selection_id: string | null;
  catalog: string;
  catalog_version: number;
  format: string;
  valid: boolean;
  calls: CheckedCall[];
}

export interface ValidateOptions {
  selection_id?: string;
  format?: CallFormat;
  catalog?: string;
}

export interface CallOptions {
  catalog?: string;
  selection_id?: string;
  approval_id?: string;
  /** Aborts the request (e.g. the AI SDK's step signal). */
  signal?: AbortSignal;
}

/** One MCP content block, as the tool's server gave it. */
export interface ContentBlock {
  type: string;
  [field: string]: unknown;
}

/** One thing a result's screening found: the rule, its class, where. */
export interface ScreeningFinding {
  rule: string;
  class: "secrets" | "injection" | "pii";
  where: string;
  action: "redact" | "flag" | "block";
}

/**
 * What a result's screening found and did (never the matched text):
 * `action` is the strongest taken.
 */
export interface Screening {
  action: "redact" | "flag" | "block";
  findings: ScreeningFinding[];
}

/**
 * The answer of `POST /api/v1/tool-calls/execute` when the tool's server was
 * tried: `outcome` `ran`, `failed` (the upstream's error result, or no result:
 * `reason` says why) or `timed_out`; `content` and `structured_content` are
 * the upstream's result as screened (`screening` says what was redacted,
 * flagged or withheld, when anything was).
 */
export interface ToolCallResult {
  outcome: "ran" | "failed" | "timed_out";
  tool: string;
  reason: string;
  content: ContentBlock[];
  structured_content: Record<string, unknown> | null;
  is_error: boolean;
  approval_id: string | null;
  call_id: string | null;
  screening?: Screening;
}

/** One approval, as `GET /api/v1/approvals/{id}` shows it to the key that asked. */
export interface Approval {
  id: string;
  status: "pending" | "approved" | "denied" | "expired" | "used";
  catalog: string;
  tool_name: string;
  tool_version: number;
  arguments: unknown;
  arguments_hash: string;
  requester: string;
  selection_id: string | null;
  request_id: string | null;
  decider: string;
  reason: string;
  created: string;
  decided: string | null;
  expires: string;
  used: string | null;
}

/** How `waitForApproval` polls (the Python client's `wait_for_approval`). */
export interface WaitOptions {
  /** Seconds before `ApprovalTimeout` (600); `null` waits until it is decided or expires. */
  timeout?: number | null;
  /** Seconds before the second poll (1), growing by half each poll... */
  interval?: number;
  /** ...up to this many seconds (15). */
  maxInterval?: number;
  signal?: AbortSignal | undefined;
}

/** A catalog tool in Quiver's canonical JSON (`export?format=canonical`). */
export interface CanonicalTool {
  name: string;
  provider_name: string;
  title: string;
  description: string;
  parameters: Record<string, unknown> | null;
  safe: boolean;
  requires_approval: boolean;
  status: string;
  category: string;
  tags: string[];
  annotations: Record<string, unknown>;
  [field: string]: unknown;
}

/** A page of a list endpoint. */
export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}
