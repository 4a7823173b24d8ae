/**
 * @quiver/ai-sdk: a Quiver client (`select`, `validateToolCalls`, `call`...) and
 * the AI SDK glue (`quiverPrepareStep`, `quiverTools`). No runtime dependency
 * beyond `fetch`; the AI SDK (`ai`, v6) is used for its types only.
 */

export {
  DEFAULT_CATALOG,
  Quiver,
  type QuiverOptions,
  type RequestOptions,
} from "./client.js";
export * from "./errors.js";
export { RetryPolicy, type RetryOptions, parseRetryAfter } from "./retry.js";
export type * from "./types.js";
export { type StepSelection, quiverSelection } from "./ai-sdk/context.js";
export {
  type AiSdkToolCall,
  MESSAGE_BUDGET,
  chatMessages,
  toolCallItems,
} from "./ai-sdk/messages.js";
export {
  DEFAULT_MAX_TOOLS,
  type PrepareStepOptions,
  type QuiverConnection,
  type StepSelectOptions,
  quiverPrepareStep,
} from "./ai-sdk/prepare-step.js";
export {
  type NeedsAuthorizationOutput,
  type PendingApprovalOutput,
  type QuiverTool,
  type QuiverToolOutput,
  type RefusedOutput,
  type ToolsOptions,
  quiverTools,
} from "./ai-sdk/tools.js";
