/**
 * `quiverPrepareStep`: the AI SDK `prepareStep` callback that asks Quiver which
 * tools the model sees at each step (seed 004's per-step `activeTools`).
 */

import type { PrepareStepFunction, ToolSet } from "ai";

import { DEFAULT_CATALOG, Quiver, type QuiverOptions } from "../client.js";
import { QuiverError } from "../errors.js";
import type { SelectOptions } from "../types.js";
import { type StepSelection, withSelection } from "./context.js";
import { chatMessages } from "./messages.js";

/** A Quiver to talk to: its `url` and `key` (and client options), or a client. */
export type QuiverConnection = QuiverOptions | { client: Quiver };

export type StepSelectOptions = Omit<
  SelectOptions,
  "catalog" | "max_candidates" | "format"
>;

export interface PrepareStepOptions {
  /** The catalog to select from (`default`). */
  catalog?: string;
  /** At most this many tools per step (`max_candidates`; 8). */
  maxTools?: number;
  /** Any other option of `POST select` (`roles`, `categories`, `scorer`...). */
  select?: StepSelectOptions;
  /** Names of the agent's own tools (not Quiver's) to keep active every step. */
  alwaysActive?: readonly string[];
  /**
   * The tools map (from `quiverTools`): maps the names of tool calls already
   * in the conversation to catalog names before this callback's first answer.
   */
  tools?: ToolSet;
  /**
   * Put the step's selection in `experimental_context`, so `quiverTools` links
   * each call of the step to it (`selection_id`: a tool the step did not offer
   * is refused). Needs a plain-object context, or none. Default true.
   */
  linkCalls?: boolean;
  /** Told each step's selection (logging, tests, your own validation). */
  onSelection?: (step: StepSelection) => void | PromiseLike<void>;
}

export const DEFAULT_MAX_TOOLS = 8;

/** The client of a connection: the one given, or a new one for `url` and `key`. */
export function clientOf(connection: QuiverConnection): Quiver {
  return "client" in connection ? connection.client : new Quiver(connection);
}

/**
 * The `prepareStep` of a `ToolLoopAgent` (or `generateText`/`streamText`): one
 * `POST select` per step, from the step's messages (the latest user turn, the
 * earlier ones, and the tools already called), answering `{ activeTools }`
 * with the AI SDK names of Quiver's picks. Quiver's answer says no tool fits:
 * `activeTools` holds only `alwaysActive`.
 */
export function quiverPrepareStep<TOOLS extends ToolSet = ToolSet>(
  options: QuiverConnection & PrepareStepOptions,
): PrepareStepFunction<TOOLS> {
  const client = clientOf(options);
  const catalog = options.catalog ?? DEFAULT_CATALOG;
  const maxTools = options.maxTools ?? DEFAULT_MAX_TOOLS;
  const names = catalogNames(options.tools);
  return async ({ messages, stepNumber, experimental_context }) => {
    const chat = chatMessages(messages, names);
    if (chat.length === 0) {
      throw new QuiverError(
        "quiverPrepareStep: the step has no user or assistant turn to select for",
      );
    }
    const selection = await client.select({
      ...options.select,
      catalog,
      max_candidates: maxTools,
      format: "mcp",
      messages: chat,
    });
    const picked = selection.tools.map((pick) => {
      const name = String(pick.definition["name"] ?? pick.name);
      names.set(name, pick.name);
      return name;
    });
    const activeTools = [...new Set([...picked, ...(options.alwaysActive ?? [])])];
    const step: StepSelection = { selection, catalog, stepNumber, activeTools };
    await options.onSelection?.(step);
    const linked = options.linkCalls ?? true;
    return {
      activeTools: activeTools as Array<keyof TOOLS>,
      ...(linked
        ? { experimental_context: withSelection(experimental_context, step) }
        : {}),
    };
  };
}

/** AI SDK name -> catalog name, from the tools' `metadata` set by `quiverTools`. */
function catalogNames(tools: ToolSet | undefined): Map<string, string> {
  const names = new Map<string, string>();
  for (const [key, tool] of Object.entries(tools ?? {})) {
    const name = tool.metadata?.["name"];
    if (tool.metadata?.["source"] === "quiver" && typeof name === "string") {
      names.set(key, name);
    }
  }
  return names;
}
