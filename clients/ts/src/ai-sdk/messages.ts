/**
 * The AI SDK's step messages as the OpenAI-style chat `POST select` reads:
 * user and assistant turns, and the assistant's tool calls by their catalog
 * names, so Quiver's ensemble sees the conversation (focus, transitions and
 * sticky signals come from the tools already called).
 *
 * System prompts and tool outputs are left out: Quiver scores neither, and
 * every byte sent is stored in the selection's audit row (20,000 characters
 * at most), so the newest turns are kept within `MESSAGE_BUDGET`.
 */

import type { ModelMessage } from "ai";

import type { ChatMessage } from "../types.js";

/** Characters of chat (as JSON) sent per selection; the server takes 20,000. */
export const MESSAGE_BUDGET = 16_000;

/** The chat for `POST select`, newest turns kept within `budget` characters. */
export function chatMessages(
  messages: readonly ModelMessage[],
  names: ReadonlyMap<string, string>,
  budget: number = MESSAGE_BUDGET,
): ChatMessage[] {
  const kept: ChatMessage[] = [];
  let used = 2;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    const turn = message === undefined ? undefined : chatMessage(message, names);
    if (turn === undefined) {
      continue;
    }
    const size = JSON.stringify(turn).length + 1;
    if (used + size > budget) {
      if (kept.length === 0) {
        kept.push(truncated(turn, budget - used));
      }
      break;
    }
    kept.push(turn);
    used += size;
  }
  return kept.reverse();
}

function chatMessage(
  message: ModelMessage,
  names: ReadonlyMap<string, string>,
): ChatMessage | undefined {
  if (message.role === "user") {
    return { role: "user", content: textOf(message.content) };
  }
  if (message.role !== "assistant") {
    return undefined;
  }
  const content = textOf(message.content);
  const calls = typeof message.content === "string" ? [] : message.content;
  const toolCalls = calls.flatMap((part) =>
    part.type === "tool-call"
      ? [
          {
            id: part.toolCallId,
            type: "function" as const,
            function: { name: names.get(part.toolName) ?? part.toolName },
          },
        ]
      : [],
  );
  if (!content && toolCalls.length === 0) {
    return undefined;
  }
  return toolCalls.length > 0
    ? { role: "assistant", content, tool_calls: toolCalls }
    : { role: "assistant", content };
}

/** The text parts of a message's content (images, files and reasoning left out). */
function textOf(content: ModelMessage["content"]): string {
  if (typeof content === "string") {
    return content;
  }
  return content
    .flatMap((part) => (part.type === "text" ? [part.text] : []))
    .join("\n");
}

/** The newest turn alone over the budget: its text cut to fit. */
function truncated(turn: ChatMessage, room: number): ChatMessage {
  const text = typeof turn.content === "string" ? turn.content : "";
  const overhead = JSON.stringify({ ...turn, content: "" }).length;
  const fit = Math.max(0, room - overhead);
  // JSON escapes may make a character longer: cut until the whole fits.
  let cut = text.slice(0, fit);
  while (cut && JSON.stringify(cut).length - 2 > fit) {
    cut = cut.slice(0, Math.floor(cut.length * 0.9));
  }
  return { ...turn, content: cut };
}

/** A tool call as the AI SDK reports it (`step.toolCalls`). */
export interface AiSdkToolCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
}

/**
 * A step's tool calls as Responses `function_call` items, for
 * `validateToolCalls(items, { selection_id, format: "openai-responses" })`:
 * the check of calls that do not run through Quiver.
 */
export function toolCallItems(
  calls: readonly AiSdkToolCall[],
): Array<Record<string, string>> {
  return calls.map((call) => ({
    type: "function_call",
    call_id: call.toolCallId,
    name: call.toolName,
    arguments: JSON.stringify(call.input ?? {}),
  }));
}
