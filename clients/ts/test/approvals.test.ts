/**
 * A Quiver tool that needs approval, called as the AI SDK calls it: nothing
 * runs until a person approved exactly that call, an approval runs once, and
 * the package never carries an approval over to other arguments.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { type QuiverToolOutput, quiverTools } from "@quiver/ai-sdk";

import { decide, key, report, url } from "./live.js";

type Output = QuiverToolOutput & { approval_id?: string | null; detail?: string };

test("an approval waits, runs once, and never covers other arguments", async () => {
  const tools = await quiverTools({ url: url(), key: key() });
  const thermostat = tools["weather_set_thermostat"];
  assert.ok(thermostat?.execute);
  const outputs: Output[] = [];
  const run = async (celsius: number): Promise<Output> => {
    const options = { toolCallId: `t${outputs.length}`, messages: [] };
    const output = (await thermostat.execute?.({ celsius }, options)) as Output;
    outputs.push(output);
    return output;
  };

  const asked = await run(21);
  assert.equal(asked.status, "pending_approval");
  const again = await run(21); // re-sent with its approval_id: still waiting
  assert.equal(again.status, "pending_approval");
  assert.equal(again.approval_id, asked.approval_id);
  const other = await run(25); // other arguments: a new approval, not the first
  assert.equal(other.status, "pending_approval");
  assert.notEqual(other.approval_id, asked.approval_id);

  await approve(String(other.approval_id), "deny", "too warm");
  const denied = await run(25);
  assert.equal(denied.status, "denied");
  const anew = await run(25); // a denial is final: asking again is a new request
  assert.equal(anew.status, "pending_approval");
  assert.notEqual(anew.approval_id, other.approval_id);

  await approve(String(asked.approval_id), "approve", "21 is fine");
  const ran = await run(21);
  assert.equal(ran.status, "ran");
  assert.equal(ran.approval_id, asked.approval_id);
  const once = await run(21); // used: the next such call needs its own approval
  assert.equal(once.status, "pending_approval");
  assert.notEqual(once.approval_id, asked.approval_id);

  report({
    statuses: outputs.map((output) => output.status),
    calls: outputs.map((output) => output.call_id),
    approvals: [asked, other, anew, once].map((output) => output.approval_id),
  });
});

async function approve(
  approvalId: string,
  decision: "approve" | "deny",
  reason: string,
) {
  const decided = await decide(approvalId, decision, reason);
  assert.equal(decided.status, 200, await decided.text());
}
