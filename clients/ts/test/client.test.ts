/**
 * The client against a live Quiver: the Python client's names and answers,
 * the API's errors as typed errors carrying `error`, `detail` and `fields`,
 * and a tool run against the real upstream MCP server, approvals included.
 */

import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";

import {
  AuthenticationError,
  BadRequest,
  NeedsAuthorization,
  NotFound,
  PendingApproval,
  PermissionDenied,
  Quiver,
  QuiverConnectionError,
  QuiverTimeout,
  RateLimited,
  type BatchError,
  type Selection,
} from "@quiver/ai-sdk";

import { decide, env, key, report, url } from "./live.js";

const quiver = (): Quiver => new Quiver({ url: url(), key: key() });
const calls: string[] = [];

test("select answers Quiver's picks, typed, with the selection id", async () => {
  const answer = await quiver().select({
    query: "weather forecast for Paris",
    max_candidates: 2,
  });
  assert.equal(answer.tools[0]?.name, "weather.get_forecast");
  assert.match(answer.selection_id, /^[0-9a-f-]{36}$/);
  assert.equal(answer.catalog, "default");
  assert.equal(answer.no_tool, null);
  assert.ok(answer.tools.length <= 2);
});

test("select reads chat messages and renders definitions in the asked format", async () => {
  const answer = await quiver().select({
    messages: [{ role: "user", content: "what will the weather be in Oslo?" }],
    format: "openai",
    max_candidates: 1,
  });
  const [pick] = answer.tools;
  assert.equal(pick?.name, "weather.get_forecast");
  assert.deepEqual(
    (pick?.definition as { function: { name: string } }).function.name,
    "weather_get_forecast",
  );
});

test("select refuses a request with both or neither of query and messages before sending", () => {
  assert.throws(() => quiver().select({} as never), TypeError);
});

test("selectBatch answers in order, an error in its request's place", async () => {
  const results = await quiver().selectBatch([
    { query: "weather forecast" },
    { query: "   " },
  ]);
  assert.equal((results[0] as Selection).tools[0]?.name, "weather.get_forecast");
  const error = results[1] as BatchError;
  assert.equal(error.error, "invalid");
  assert.match(error.detail, /^requests\[1\]\.query: /);
});

test("validateToolCalls checks a model's calls against the linked selection", async () => {
  const client = quiver();
  const offered = await client.select({ query: "weather forecast", max_candidates: 1 });
  const output = {
    role: "assistant",
    tool_calls: [
      call("a", "weather_get_forecast", { city: "" }),
      call("b", "weather_delete_file", { path: "/tmp/x" }),
    ],
  };
  const check = await client.validateToolCalls(output, {
    selection_id: offered.selection_id,
    format: "openai",
  });
  assert.equal(check.valid, false);
  assert.equal(check.selection_id, offered.selection_id);
  const [forecast, deletion] = check.calls;
  assert.equal(forecast?.tool, "weather.get_forecast"); // the canonical name
  assert.equal(forecast?.errors[0]?.pointer, "/city");
  assert.match(forecast?.hint ?? "", /city/);
  assert.ok(deletion?.flags.includes("not_offered"));
});

test("call runs the tool on its server and answers its result as it was", async () => {
  const result = await quiver().call("weather.get_forecast", { city: "Bern", days: 1 });
  assert.equal(result.outcome, "ran");
  assert.equal(result.is_error, false);
  assert.deepEqual(result.structured_content, {
    city: "Bern",
    forecast: ["day 1: sunny, 21 C"],
  });
  assert.ok(result.call_id);
  calls.push(result.call_id);
});

test("a call needing approval throws PendingApproval, then runs once a person approved it", async () => {
  const client = quiver();
  const pending = await client
    .call("weather.delete_file", { path: "/a" })
    .then(() => assert.fail("the call ran without an approval"))
    .catch((error: unknown) => error);
  assert.ok(pending instanceof PendingApproval);
  assert.equal(pending.answer.status, "pending_approval");
  assert.equal((await client.approval(pending.approvalId)).status, "pending");
  calls.push(String(pending.answer["call_id"]));

  const decided = await decide(pending.approvalId, "approve", "one file, fine");
  assert.equal(decided.status, 200, await decided.text());
  const result = await client.call(
    "weather.delete_file",
    { path: "/a" },
    { approval_id: pending.approvalId },
  );
  assert.equal(result.outcome, "ran");
  assert.equal(result.approval_id, pending.approvalId);
  calls.push(String(result.call_id));
  assert.equal((await client.approval(pending.approvalId)).status, "used");
});

test("refusals throw the API's error with its error, detail and fields", async () => {
  const client = quiver();
  const bad = await client
    .call("weather.get_forecast", { city: 3 })
    .catch((e: unknown) => e);
  assert.ok(bad instanceof BadRequest);
  assert.equal(bad.status, 400);
  assert.match(bad.detail, /^arguments\/city: /);
  assert.ok("arguments" in bad.fields);
  assert.match(String((bad.body as { hint?: string }).hint), /city/);

  const unknown = await client.call("weather.nothing").catch((e: unknown) => e);
  assert.ok(unknown instanceof NotFound);
  assert.equal(unknown.detail, "name: no tool 'weather.nothing' in 'default'");

  const roles = await client
    .select({ query: "weather", roles: ["finance"] })
    .catch((e: unknown) => e);
  assert.ok(roles instanceof PermissionDenied);
  assert.match(roles.detail, /^roles: /);

  const stranger = new Quiver({ url: url(), key: "qv_nobody_nothing" });
  const denied = await stranger.select({ query: "weather" }).catch((e: unknown) => e);
  assert.ok(denied instanceof AuthenticationError);
  assert.equal(denied.status, 401);
});

test("a tool whose server acts for each person throws NeedsAuthorization", async () => {
  const error = await quiver()
    .call("notes.whoami", {})
    .catch((e: unknown) => e);
  assert.ok(error instanceof NeedsAuthorization, String(error));
  assert.ok(error instanceof PermissionDenied);
  assert.equal(error.status, 403);
  assert.equal(error.error, "needs_authorization");
  assert.equal(error.authorizationUrl, null); // the key acts for no person
  assert.match(error.detail, /acts for no person/);
});

test("a 429 whose Retry-After is longer than maxWait is thrown at once, carrying it", async () => {
  const limited = new Quiver({
    url: url(),
    key: env("QUIVER_LIMITED_KEY"), // one request a minute
    retry: { maxWait: 0.5 },
  });
  await limited.select({ query: "weather" });
  const error = await limited.select({ query: "weather" }).catch((e: unknown) => e);
  assert.ok(error instanceof RateLimited);
  assert.equal(error.status, 429);
  assert.ok((error.retryAfter ?? 0) > 0.5, `Retry-After ${error.retryAfter}`);
});

test("a server that never answers in time is a QuiverTimeout", async () => {
  const impatient = new Quiver({ url: url(), key: key(), timeout: 0.3 });
  const error = await impatient
    .call("weather.slow_echo", { text: "hi", seconds: 1.5 })
    .catch((e: unknown) => e);
  assert.ok(error instanceof QuiverTimeout, String(error));
});

test("no server at all is a QuiverConnectionError after the retries", async () => {
  const port = await freePort();
  let attempts = 0;
  const counting: typeof fetch = (input, init) => {
    attempts += 1;
    return fetch(input, init);
  };
  const nowhere = new Quiver({
    url: `http://127.0.0.1:${port}`,
    key: key(),
    retry: { maxRetries: 2, backoff: 0.01 },
    fetch: counting,
  });
  const error = await nowhere.select({ query: "weather" }).catch((e: unknown) => e);
  assert.ok(error instanceof QuiverConnectionError, String(error));
  assert.ok(!(error instanceof QuiverTimeout));
  assert.equal(attempts, 3);
});

test("report the calls made, for the audit check", () => {
  report({ calls });
});

function call(id: string, name: string, args: unknown): Record<string, unknown> {
  return { id, type: "function", function: { name, arguments: JSON.stringify(args) } };
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        resolve(typeof address === "object" && address ? address.port : 0),
      );
    });
  });
}
