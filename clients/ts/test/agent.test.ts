/**
 * The real AI SDK's ToolLoopAgent, its mock language model playing a scripted
 * conversation (no LLM: the model is the only stub), with Quiver choosing each
 * step's `activeTools` and running each call on the real upstream MCP server.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import type {
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
} from "@ai-sdk/provider";
import { ToolLoopAgent, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";

import {
  Quiver,
  type QuiverToolOutput,
  type StepSelection,
  quiverPrepareStep,
  quiverTools,
  toolCallItems,
} from "@quiver/ai-sdk";

import { decide, key, report, url } from "./live.js";

const PROMPT =
  "What is the weather forecast for Paris? Then set the office thermostat to 22 degrees.";

type Turn = (
  options: LanguageModelV3CallOptions,
) => Promise<LanguageModelV3GenerateResult>;

/** A model that plays `turns` in order, noting the tools each call was given. */
function scriptedModel(turns: Turn[]): {
  model: MockLanguageModelV3;
  offered: string[][];
} {
  const offered: string[][] = [];
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      offered.push((options.tools ?? []).map((tool) => tool.name));
      const turn = turns[offered.length - 1];
      assert.ok(turn, `the model was asked ${offered.length} times`);
      return turn(options);
    },
  });
  return { model, offered };
}

/** The scripted conversation: forecast, thermostat (pending), approved, answer. */
function officeModel(): ReturnType<typeof scriptedModel> {
  return scriptedModel([
    async () => toolCall("c1", "weather_get_forecast", { city: "Paris", days: 1 }),
    async () => toolCall("c2", "weather_set_thermostat", { celsius: 22 }),
    async (options) => {
      // The model acts on the pending approval: a person approves it, then
      // the same call is made again (the package re-sends its approval_id).
      const output = lastToolOutput(options) as { status: string; approval_id: string };
      assert.equal(output.status, "pending_approval");
      const decided = await decide(output.approval_id, "approve", "22 is fine");
      assert.equal(decided.status, 200, await decided.text());
      return toolCall("c3", "weather_set_thermostat", { celsius: 22 });
    },
    async () => text("Paris will be sunny; the thermostat is at 22 degrees."),
  ]);
}

test("a ToolLoopAgent's every step sees Quiver's selection, and its calls run through Quiver", async () => {
  const tools = await quiverTools({ url: url(), key: key() });
  const selections: StepSelection[] = [];
  const outputs: QuiverToolOutput[] = [];
  const { model, offered } = officeModel();
  const agent = new ToolLoopAgent({
    model,
    instructions: "You run the office for its people.",
    tools,
    prepareStep: quiverPrepareStep({
      url: url(),
      key: key(),
      maxTools: 3,
      tools,
      onSelection: (step) => {
        selections.push(step);
      },
    }),
    stopWhen: stepCountIs(6),
    onStepFinish: (step) => {
      outputs.push(
        ...step.toolResults.map((result) => result.output as QuiverToolOutput),
      );
    },
  });

  const result = await agent.generate({ prompt: PROMPT });

  assert.equal(result.steps.length, 4);
  assert.deepEqual(
    selections.map((s) => s.stepNumber),
    [0, 1, 2, 3],
  );
  assertEachStepSawItsSelection(selections, offered);
  assertTheConversationCounted(selections[1]);
  assert.deepEqual(
    outputs.map((output) => output.status),
    ["ran", "pending_approval", "ran"],
  );
  const [ran, pending, approved] = outputs as unknown as Array<Record<string, unknown>>;
  assert.deepEqual(ran?.["structured_content"], {
    city: "Paris",
    forecast: ["day 1: sunny, 21 C"],
  });
  assert.equal(approved?.["approval_id"], pending?.["approval_id"]);
  assert.equal(result.text, "Paris will be sunny; the thermostat is at 22 degrees.");

  // A step's calls checked against its selection, as for tools Quiver does not run.
  const check = await new Quiver({ url: url(), key: key() }).validateToolCalls(
    toolCallItems(result.steps[0]?.toolCalls ?? []),
    { selection_id: selections[0]?.selection.selection_id, format: "openai-responses" },
  );
  assert.equal(check.valid, true, JSON.stringify(check.calls));
  assert.equal(check.calls[0]?.tool, "weather.get_forecast");

  report({
    selections: selections.map((step) => step.selection.selection_id),
    calls: outputs.map((output) => output.call_id),
    call_selections: [0, 1, 2].map((i) => selections[i]?.selection.selection_id),
    approval_id: pending?.["approval_id"],
    validation_id: check.validation_id,
  });
});

/** The model was offered exactly Quiver's picks at each step. */
function assertEachStepSawItsSelection(
  selections: StepSelection[],
  offered: string[][],
): void {
  assert.equal(selections.length, offered.length);
  for (const [index, step] of selections.entries()) {
    const picks = step.selection.tools.map((pick) => String(pick.definition["name"]));
    assert.deepEqual(step.activeTools, picks);
    // The AI SDK hands the active tools over in the tools map's order.
    assert.deepEqual(
      [...(offered[index] ?? [])].sort(),
      [...picks].sort(),
      `step ${index}: the model saw exactly Quiver's picks`,
    );
  }
  assert.ok(offered[0]?.includes("weather_get_forecast"));
  assert.ok(offered[1]?.includes("weather_set_thermostat"));
}

/** After the forecast, the curator's transition and the recency of the tool
 * just called count in the next step's scores. */
function assertTheConversationCounted(step: StepSelection | undefined): void {
  const picks = step?.selection.tools ?? [];
  const thermostat = picks.find((pick) => pick.name === "weather.set_thermostat");
  assert.ok((thermostat?.signals["transition"] ?? 0) > 0, JSON.stringify(picks));
  const forecast = picks.find((pick) => pick.name === "weather.get_forecast");
  assert.ok((forecast?.signals["sticky"] ?? 0) > 0, JSON.stringify(picks));
}

test("a call outside its step's selection is refused naming selection_id, and nothing runs", async () => {
  const tools = await quiverTools({ url: url(), key: key() });
  const prepareStep = quiverPrepareStep({ url: url(), key: key(), maxTools: 1, tools });
  const step = await prepareStep({
    steps: [],
    stepNumber: 0,
    model: new MockLanguageModelV3(),
    messages: [{ role: "user", content: "weather forecast for Rome" }],
    experimental_context: { user: "dana" },
  });
  assert.deepEqual(step?.activeTools, ["weather_get_forecast"]);
  const context = step?.experimental_context as Record<string, unknown>;
  assert.equal(context["user"], "dana"); // the caller's own context is kept

  const output = await tools["weather_delete_file"]?.execute?.(
    { path: "/etc/hosts" },
    { toolCallId: "x1", messages: [], experimental_context: context },
  );
  assert.equal((output as { status: string }).status, "refused");
  assert.match((output as { detail: string }).detail, /^selection_id: /);
});

test("the tools map is the catalog as the key sees it, keyed by provider names", async () => {
  const tools = await quiverTools({ url: url(), key: key() });
  const forecast = tools["weather_get_forecast"];
  assert.ok(forecast);
  assert.deepEqual(forecast.metadata, {
    source: "quiver",
    catalog: "default",
    name: "weather.get_forecast",
    requires_approval: false,
  });
  assert.ok(
    !("hidden_refund" in tools),
    "a tool of a role the key lacks is not offered",
  );
  const schema = await (forecast.inputSchema as { jsonSchema: unknown }).jsonSchema;
  assert.deepEqual((schema as { required: string[] }).required, ["city"]);
});

test("a bad argument is a refusal the model can repair, naming the argument", async () => {
  const tools = await quiverTools({ url: url(), key: key() });
  const output = (await tools["weather_get_forecast"]?.execute?.(
    { city: "" },
    { toolCallId: "x2", messages: [] },
  )) as { status: string; detail: string; hint: string; fields: object };
  assert.equal(output.status, "refused");
  assert.match(output.detail, /^arguments\/city: /);
  assert.match(output.hint, /city/);
  assert.ok("arguments" in output.fields);
});

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

function toolCall(
  id: string,
  name: string,
  input: unknown,
): LanguageModelV3GenerateResult {
  return {
    content: [
      {
        type: "tool-call",
        toolCallId: id,
        toolName: name,
        input: JSON.stringify(input),
      },
    ],
    finishReason: { unified: "tool-calls", raw: "tool_calls" },
    usage,
    warnings: [],
  };
}

function text(words: string): LanguageModelV3GenerateResult {
  return {
    content: [{ type: "text", text: words }],
    finishReason: { unified: "stop", raw: "stop" },
    usage,
    warnings: [],
  };
}

/** The output of the last tool result in the prompt the model was given. */
function lastToolOutput(options: LanguageModelV3CallOptions): unknown {
  const message = options.prompt.at(-1);
  assert.equal(message?.role, "tool");
  const part = message.content.at(-1);
  assert.equal(part?.type, "tool-result");
  assert.equal(part.output.type, "json");
  return part.output.value;
}
