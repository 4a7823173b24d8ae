/**
 * `quiverTools`: the catalog's tools, as the key may see them, as an AI SDK
 * tools map whose every `execute` runs the call through Quiver
 * (`POST /api/v1/tool-calls/execute`: access, validation, approval, the tool's
 * server, the audit trail).
 */

import type { Schema, Tool, ToolExecutionOptions } from "ai";

import { DEFAULT_CATALOG, type Quiver } from "../client.js";
import { APIError, NeedsAuthorization, PendingApproval } from "../errors.js";
import type { CanonicalTool, ToolCallResult } from "../types.js";
import { quiverSelection } from "./context.js";
import { type QuiverConnection, clientOf } from "./prepare-step.js";

/** What a Quiver tool's `execute` answers: the model reads `status` first. */
export type QuiverToolOutput =
  | ({ status: ToolCallResult["outcome"] } & ToolCallResult)
  | PendingApprovalOutput
  | NeedsAuthorizationOutput
  | RefusedOutput;

/** Nothing ran: a person must approve the call in Quiver. Calling the tool
 * again with the same arguments re-sends it with this `approval_id`. */
export interface PendingApprovalOutput {
  status: "pending_approval";
  approval_id: string;
  tool: string;
  expires: string | null;
  message: string;
  /** The `tool_call` audit event of this attempt. */
  call_id: string | null;
}

/** Nothing ran: the tool's server acts for each person, and the user has not
 * connected their account there; `authorization_url` is where they connect it
 * (null: the key acts for no person). The same call can then be sent again. */
export interface NeedsAuthorizationOutput {
  status: "needs_authorization";
  authorization_url: string | null;
  detail: string;
  message: string;
  /** The `tool_call` audit event of this attempt. */
  call_id: string | null;
}

/** Quiver refused the call (nothing ran): `detail` names the field and rule;
 * `hint` says how to repair arguments. `denied`: a person denied it. */
export interface RefusedOutput {
  status: "refused" | "denied";
  error: string;
  detail: string;
  fields: Record<string, unknown>;
  hint?: string;
  errors?: unknown[];
  /** The `tool_call` audit event of this attempt. */
  call_id: string | null;
}

export type QuiverTool = Tool<Record<string, unknown>, QuiverToolOutput>;

export interface ToolsOptions {
  /** The catalog whose tools to offer (`default`). */
  catalog?: string;
}

const PENDING_MESSAGE =
  "A person must approve this call in Quiver; nothing ran. Tell the user, and " +
  "call the tool again with the same arguments once it is approved.";
// The marker the AI SDK's jsonSchema() sets (a Symbol.for key, so every copy of
// the SDK reads it): the catalog's schema reaches the model verbatim, and
// Quiver, not the SDK, validates the arguments.
const SCHEMA_MARKER = Symbol.for("vercel.ai.schema");
const EMPTY_SCHEMA = { type: "object", properties: {} };

/**
 * Every active tool of `catalog` this key may read, keyed by the name
 * providers see (Quiver's provider-safe name, the one `quiverPrepareStep`
 * makes active). Each tool's `metadata` holds its catalog name.
 */
export async function quiverTools(
  options: QuiverConnection & ToolsOptions,
): Promise<Record<string, QuiverTool>> {
  const client = clientOf(options);
  const catalog = options.catalog ?? DEFAULT_CATALOG;
  const approvals = new Map<string, string>();
  const tools = await client.catalogTools(catalog);
  return Object.fromEntries(
    tools.map((tool) => [
      tool.provider_name || tool.name,
      quiverTool(client, catalog, tool, approvals),
    ]),
  );
}

function quiverTool(
  client: Quiver,
  catalog: string,
  tool: CanonicalTool,
  approvals: Map<string, string>,
): QuiverTool {
  const call = new ToolCall(client, catalog, tool.name, approvals);
  return {
    description: tool.description,
    ...(tool.title ? { title: tool.title } : {}),
    inputSchema: inputSchema(tool.parameters),
    metadata: {
      source: "quiver",
      catalog,
      name: tool.name,
      requires_approval: tool.requires_approval,
    },
    execute: (input, options) => call.run(input, options),
  };
}

function inputSchema(
  parameters: Record<string, unknown> | null,
): Schema<Record<string, unknown>> {
  const schema = {
    [SCHEMA_MARKER]: true,
    _type: undefined,
    jsonSchema: parameters ?? EMPTY_SCHEMA,
    validate: undefined,
  };
  return schema as unknown as Schema<Record<string, unknown>>;
}

/** One tool's calls: linked to the step's selection, carrying an approval
 * when the same call (tool and arguments) was made pending before. */
class ToolCall {
  constructor(
    readonly client: Quiver,
    readonly catalog: string,
    readonly name: string,
    readonly approvals: Map<string, string>,
  ) {}

  async run(
    input: Record<string, unknown>,
    options: ToolExecutionOptions,
  ): Promise<QuiverToolOutput> {
    const step = quiverSelection(options.experimental_context);
    const key = `${this.name}\n${canonicalJson(input)}`;
    const approvalId = this.approvals.get(key);
    try {
      const result = await this.client.call(this.name, input, {
        catalog: this.catalog,
        selection_id:
          step?.catalog === this.catalog ? step.selection.selection_id : undefined,
        approval_id: approvalId,
        signal: options.abortSignal,
      });
      this.approvals.delete(key);
      return { status: result.outcome, ...result };
    } catch (error) {
      if (error instanceof PendingApproval) {
        this.approvals.set(key, error.approvalId);
        const { structured_content: details, call_id: callId } = error.answer;
        return pending(error.approvalId, this.name, details, callId);
      }
      if (error instanceof NeedsAuthorization) {
        return needsAuthorization(error);
      }
      if (
        !(error instanceof APIError) ||
        ![400, 403, 404, 409].includes(error.status)
      ) {
        throw error;
      }
      return this.refused(error, key, approvalId);
    }
  }

  /** A refusal; an approval re-sent too early is still pending, not refused. */
  async refused(
    error: APIError,
    key: string,
    approvalId: string | undefined,
  ): Promise<QuiverToolOutput> {
    if (approvalId !== undefined && "approval_id" in error.fields) {
      const approval = await this.client.approval(approvalId);
      if (approval.status === "pending") {
        const details = { expires: approval.expires };
        return pending(approvalId, this.name, details, callIdOf(error.body));
      }
      this.approvals.delete(key);
    }
    const body = (error.body ?? {}) as Record<string, unknown>;
    return {
      status: body["outcome"] === "denied" ? "denied" : "refused",
      error: error.error,
      detail: error.detail,
      fields: error.fields,
      ...(typeof body["hint"] === "string" && body["hint"]
        ? { hint: body["hint"] }
        : {}),
      ...(Array.isArray(body["errors"]) ? { errors: body["errors"] } : {}),
      call_id: callIdOf(body),
    };
  }
}

function pending(
  approvalId: string,
  tool: string,
  details: Record<string, unknown> | null | undefined,
  callId: unknown,
): PendingApprovalOutput {
  const expires = details?.["expires"];
  return {
    status: "pending_approval",
    approval_id: approvalId,
    tool,
    expires: typeof expires === "string" ? expires : null,
    message: PENDING_MESSAGE,
    call_id: typeof callId === "string" ? callId : null,
  };
}

function needsAuthorization(error: NeedsAuthorization): NeedsAuthorizationOutput {
  const where = error.authorizationUrl;
  return {
    status: "needs_authorization",
    authorization_url: where,
    detail: error.detail,
    message:
      "Nothing ran: the user must connect their own account for this tool" +
      (where ? ` at ${where}` : "") +
      ". Tell the user, and call the tool again once it is connected.",
    call_id: callIdOf(error.body),
  };
}

function callIdOf(body: unknown): string | null {
  const callId = (body as Record<string, unknown> | undefined)?.["call_id"];
  return typeof callId === "string" ? callId : null;
}

/** JSON with sorted keys: the same arguments give the same text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) {
    return `[${value.map(canonicalJson).join(",")}]`;
  }
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, item]) => `${JSON.stringify(k)}:${canonicalJson(item)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
