/**
 * The link between a step's selection and that step's tool calls: the AI SDK
 * hands the `experimental_context` that `prepareStep` returns to every tool's
 * `execute` of the step, so the selection rides there under a symbol (no name
 * of the caller's own context can clash with it, and JSON never shows it).
 */

import { QuiverError } from "../errors.js";
import type { Selection } from "../types.js";

const SELECTION = Symbol.for("quiver.ai-sdk.selection");

/** What Quiver selected for one step of an agent. */
export interface StepSelection {
  readonly selection: Selection;
  readonly catalog: string;
  readonly stepNumber: number;
  /** The AI SDK tool names made active (Quiver's picks, then `alwaysActive`). */
  readonly activeTools: readonly string[];
}

/** The step's selection from a tool's `experimental_context`, if a
 * `quiverPrepareStep` put one there. */
export function quiverSelection(context: unknown): StepSelection | undefined {
  if (typeof context !== "object" || context === null) {
    return undefined;
  }
  const found = (context as Record<symbol, unknown>)[SELECTION];
  return found === undefined ? undefined : (found as StepSelection);
}

/** A copy of the caller's context carrying `step`; a context that cannot be
 * copied (a class instance, a primitive) is refused rather than dropped. */
export function withSelection(context: unknown, step: StepSelection): object {
  if (context === undefined || context === null) {
    return { [SELECTION]: step };
  }
  if (isPlainObject(context)) {
    return { ...context, [SELECTION]: step };
  }
  throw new QuiverError(
    "quiverPrepareStep: experimental_context must be a plain object (or none) " +
      "to carry the step's selection_id to its tool calls; or pass linkCalls: false",
  );
}

function isPlainObject(value: unknown): value is Record<string | symbol, unknown> {
  if (typeof value !== "object" || value === null) {
    return false;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}
