/**
 * An AI SDK agent whose every step sees the tools Quiver selects, each call run
 * through Quiver; no LLM key. Run it against `make run` with an agent key:
 *
 *     make manage ARGS="create_api_client example --scope agent --all-catalogs"
 *     make ts
 *     QUIVER_API_KEY=<the key> node clients/ts/dist/examples/agent.js
 *
 * The model is the AI SDK's mock playing a fixed transcript: it calls the tool
 * Quiver ranked first for Paris (as the tool's schema asks: a `location` such as
 * the demo catalog's weather tools want, else a `city`), then answers. Pass your
 * provider's model instead (e.g. `openai("gpt-5")`) and nothing else changes.
 */

import { ToolLoopAgent, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";

import { quiverPrepareStep, quiverTools } from "@quiver/ai-sdk";

const url = process.env["QUIVER_URL"] || "http://127.0.0.1:8000";
const key = process.env["QUIVER_API_KEY"] ?? "";
const catalog = process.env["QUIVER_CATALOG"] || "default";
if (!key) {
  console.log("Set QUIVER_API_KEY to an agent key (see the top of this file).");
  process.exit(2);
}

// Quiver's first pick at the current step: the scripted model calls it (the AI SDK
// hands a model the active tools in its tools map's order, not in Quiver's).
let best = "";

// --- The lines docs/tutorials/connect-typescript.md shows ------------------------
const tools = await quiverTools({ url, key, catalog });
const agent = new ToolLoopAgent({
  model: scriptedModel(), // your provider's model, e.g. openai("gpt-5")
  tools,
  prepareStep: quiverPrepareStep({
    url,
    key,
    catalog,
    maxTools: 5,
    tools,
    onSelection: ({ stepNumber, activeTools }) => {
      best = activeTools[0] ?? "";
      console.log(
        `step ${stepNumber}: Quiver offered ${activeTools.join(", ") || "no tool"}`,
      );
    },
  }),
  stopWhen: stepCountIs(5),
});
const result = await agent.generate({
  prompt: "What is the weather forecast for Paris?",
});
// ---------------------------------------------------------------------------------

for (const step of result.steps) {
  for (const call of step.toolResults) {
    const output = call.output as { status: string; detail?: string };
    console.log(
      `the model called ${call.toolName}: ${output.status} ${output.detail ?? ""}`,
    );
  }
}
console.log(`the answer: ${result.text}`);

/** The transcript: call Quiver's first pick, then say what it answered. */
function scriptedModel(): MockLanguageModelV3 {
  const usage = {
    inputTokens: { total: 0, noCache: 0, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 0, text: 0, reasoning: undefined },
  };
  let turn = 0;
  return new MockLanguageModelV3({
    doGenerate: async ({ tools: offered = [], prompt }) => {
      turn += 1;
      const first = offered.find((tool) => tool.name === best) ?? offered[0];
      if (turn === 1 && first) {
        const input = JSON.stringify(parisFor(first));
        return {
          content: [
            { type: "tool-call", toolCallId: "call-1", toolName: first.name, input },
          ],
          finishReason: { unified: "tool-calls", raw: "tool_calls" },
          usage,
          warnings: [],
        };
      }
      const last = JSON.stringify(prompt.at(-1)?.content ?? "").slice(0, 200);
      return {
        content: [{ type: "text", text: `Here is what I found: ${last}` }],
        finishReason: { unified: "stop", raw: "stop" },
        usage,
        warnings: [],
      };
    },
  });
}

/** Paris as the tool's schema asks for a place: a `location` or a `city`. */
function parisFor(tool: { type: string; inputSchema?: unknown }): object {
  const schema = (tool.inputSchema ?? {}) as { properties?: object };
  const wanted = Object.keys(schema.properties ?? {});
  return wanted.includes("location")
    ? { location: { place: "Paris" } }
    : { city: "Paris" };
}
