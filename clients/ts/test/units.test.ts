/**
 * The parts that need no server: the step's messages as Quiver's chat, the
 * selection carried in the agent's context, and the retry policy.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import type { ModelMessage } from "ai";

import {
  ApprovalTimeout,
  Quiver,
  QuiverError,
  RetryPolicy,
  Unavailable,
  type Selection,
  type StepSelection,
  chatMessages,
  parseRetryAfter,
  quiverSelection,
} from "@quiver/ai-sdk";
import { withSelection } from "../src/ai-sdk/context.js";
import { canonicalJson } from "../src/ai-sdk/tools.js";

const NAMES = new Map([["weather_get_forecast", "weather.get_forecast"]]);

test("the chat keeps user and assistant turns and names each tool called by its catalog name", () => {
  const messages: ModelMessage[] = [
    { role: "system", content: "You are terse." },
    { role: "user", content: [{ type: "text", text: "forecast for Paris" }] },
    {
      role: "assistant",
      content: [
        { type: "reasoning", text: "the user wants weather" },
        { type: "text", text: "Let me look." },
        {
          type: "tool-call",
          toolCallId: "c1",
          toolName: "weather_get_forecast",
          input: { city: "Paris" },
        },
      ],
    },
    {
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "c1",
          toolName: "weather_get_forecast",
          output: { type: "json", value: { forecast: "sunny" } },
        },
      ],
    },
    { role: "user", content: "and set the thermostat" },
  ];
  assert.deepEqual(chatMessages(messages, NAMES), [
    { role: "user", content: "forecast for Paris" },
    {
      role: "assistant",
      content: "Let me look.",
      tool_calls: [
        { id: "c1", type: "function", function: { name: "weather.get_forecast" } },
      ],
    },
    { role: "user", content: "and set the thermostat" },
  ]);
});

test("a tool unknown to the names map keeps the name the model used", () => {
  const messages: ModelMessage[] = [
    {
      role: "assistant",
      content: [
        { type: "tool-call", toolCallId: "c", toolName: "my_local_tool", input: {} },
      ],
    },
  ];
  const [turn] = chatMessages(messages, NAMES);
  assert.equal(turn?.tool_calls?.[0]?.function.name, "my_local_tool");
});

test("a long conversation keeps its newest turns within the budget", () => {
  const messages: ModelMessage[] = Array.from({ length: 50 }, (_, i) => ({
    role: "user" as const,
    content: `turn ${i} ${"x".repeat(100)}`,
  }));
  const chat = chatMessages(messages, NAMES, 1_000);
  assert.ok(JSON.stringify(chat).length <= 1_000);
  assert.ok(chat.length > 1);
  assert.match(String(chat.at(-1)?.content), /^turn 49 /);
  assert.match(String(chat[0]?.content), new RegExp(`^turn ${50 - chat.length} `));
});

test("a newest turn alone over the budget is cut to fit, escapes counted", () => {
  const huge = `${'"'.repeat(3_000)}${"é".repeat(3_000)}`;
  const chat = chatMessages([{ role: "user", content: huge }], NAMES, 2_000);
  assert.equal(chat.length, 1);
  assert.ok(JSON.stringify(chat).length <= 2_000, `${JSON.stringify(chat).length}`);
  assert.ok(String(chat[0]?.content).length > 500);
});

test("the selection rides in a copy of the caller's plain context, never in its own object", () => {
  const step = fakeStep();
  const mine = { user: "dana" };
  const carried = withSelection(mine, step);
  assert.notEqual(carried, mine);
  assert.equal(quiverSelection(carried), step);
  assert.equal(quiverSelection(mine), undefined);
  assert.deepEqual(JSON.parse(JSON.stringify(carried)), { user: "dana" });
  assert.equal(quiverSelection(withSelection(undefined, step)), step);
});

test("a context that cannot be copied is refused rather than losing the link", () => {
  class Session {
    user = "dana";
  }
  assert.throws(() => withSelection(new Session(), fakeStep()), QuiverError);
  assert.throws(() => withSelection("text", fakeStep()), QuiverError);
});

test("the same arguments give the same canonical JSON whatever their key order", () => {
  assert.equal(
    canonicalJson({ b: [1, { d: 1, c: 2 }], a: "x", skip: undefined }),
    '{"a":"x","b":[1,{"c":2,"d":1}]}',
  );
});

test("the retry policy waits Retry-After up to maxWait, else backs off, then gives up", () => {
  const policy = new RetryPolicy({
    maxRetries: 2,
    backoff: 1,
    maxBackoff: 3,
    maxWait: 10,
  });
  assert.equal(policy.delay(0, 4), 4);
  assert.equal(policy.delay(0, 11), undefined);
  const second = policy.delay(1, undefined) ?? 0;
  assert.ok(second >= 2 && second <= 2.2, `${second}`);
  assert.equal(policy.delay(2, undefined), undefined);
  assert.equal(parseRetryAfter("7"), 7);
  assert.equal(parseRetryAfter(null), undefined);
  assert.equal(parseRetryAfter("soon"), undefined);
  const date = new Date(Date.now() + 30_000).toUTCString();
  assert.ok(Math.abs((parseRetryAfter(date) ?? 0) - 30) < 2);
});

function fakeStep(): StepSelection {
  const selection = { selection_id: "00000000-0000-0000-0000-000000000000", tools: [] };
  return {
    selection: selection as unknown as Selection,
    catalog: "default",
    stepNumber: 0,
    activeTools: [],
  };
}

test("waitForApproval waits out a 429's Retry-After and a 503, then resolves", async () => {
  const answers = [
    new Response(JSON.stringify({ error: "throttled" }), {
      status: 429,
      headers: { "Retry-After": "0.2" },
    }),
    new Response(JSON.stringify({ error: "unavailable" }), { status: 503 }),
    Response.json({ id: "a-1", status: "pending" }),
    Response.json({ id: "a-1", status: "expired", reason: "" }),
  ];
  const paths: string[] = [];
  const fakeFetch = (async (input: URL | string) => {
    paths.push(new URL(String(input)).pathname);
    return answers.shift() ?? Response.json({}, { status: 500 });
  }) as typeof fetch;
  const quiver = new Quiver({ url: "http://quiver.test", key: "k", fetch: fakeFetch });
  const decision = await quiver.waitForApproval("a-1", {
    interval: 0.01,
    maxInterval: 0.02,
  });
  assert.equal(decision.status, "expired");
  assert.deepEqual(paths, Array(4).fill("/api/v1/approvals/a-1"));
});

test("waitForApproval gives up at once when Retry-After is past its deadline", async () => {
  let polls = 0;
  const fakeFetch = (async () => {
    polls += 1;
    return new Response("{}", { status: 429, headers: { "Retry-After": "3600" } });
  }) as typeof fetch;
  const quiver = new Quiver({ url: "http://quiver.test", fetch: fakeFetch });
  await assert.rejects(quiver.waitForApproval("a-1", { timeout: 60 }), ApprovalTimeout);
  assert.equal(polls, 1);
});

test("only an answer the server marks retryable is sent again", async () => {
  const ran = {
    error: "unavailable",
    detail: "audit: the call ran upstream but its outcome could not be recorded",
    retryable: false,
  };
  const answers = [
    new Response(JSON.stringify(ran), { status: 503 }),
    Response.json(
      { error: "unavailable", retryable: true },
      {
        status: 503,
        headers: { "Retry-After": "0.01" },
      },
    ),
    new Response(JSON.stringify({ error: "unavailable" }), { status: 503 }),
    Response.json({ outcome: "ran", tool: "t", content: [], is_error: false }),
  ];
  let sent = 0;
  const fakeFetch = (async () => {
    sent += 1;
    return answers.shift() ?? Response.json({}, { status: 500 });
  }) as typeof fetch;
  const quiver = new Quiver({ url: "http://quiver.test", key: "k", fetch: fakeFetch });
  const once = await quiver.call("t").catch((e: unknown) => e);
  assert.ok(once instanceof Unavailable && !once.retryable, String(once));
  assert.equal(sent, 1);
  const unmarked = await quiver.call("t").catch((e: unknown) => e);
  assert.ok(unmarked instanceof Unavailable && !unmarked.retryable, String(unmarked));
  assert.equal(sent, 3); // the retryable one, then one with no mark: not sent again
  assert.equal((await quiver.call("t")).outcome, "ran");
  assert.equal(sent, 4);
});
