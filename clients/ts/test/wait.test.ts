/**
 * `waitForApproval` against the live Quiver: a call waits for a person, who
 * decides a moment later; the wait resolves to the decision (approved: the
 * re-sent call runs; denied: its reason), and gives up at its timeout.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { ApprovalTimeout, PendingApproval, Quiver } from "@quiver/ai-sdk";

import { decide, key, report, url } from "./live.js";

const THERMOSTAT = "weather.set_thermostat";

async function pending(quiver: Quiver, celsius: number): Promise<PendingApproval> {
  try {
    await quiver.call(THERMOSTAT, { celsius });
  } catch (error) {
    if (error instanceof PendingApproval) {
      return error;
    }
    throw error;
  }
  throw new Error("the call ran without an approval");
}

function later(seconds: number, work: () => Promise<Response>): Promise<Response> {
  return new Promise((resolve, reject) => {
    setTimeout(() => work().then(resolve, reject), seconds * 1000);
  });
}

test("the wait resolves to the approval, and the call then runs", async () => {
  const quiver = new Quiver({ url: url(), key: key() });
  const asked = await pending(quiver, 19);

  const timedOut = await quiver
    .waitForApproval(asked, { timeout: 0.5, interval: 0.1 })
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  assert.ok(timedOut instanceof ApprovalTimeout);
  assert.equal(timedOut.approvalId, asked.approvalId);
  assert.equal(timedOut.status, "pending");

  const person = later(0.5, () => decide(asked.approvalId, "approve", "19 is fine"));
  const decision = await quiver.waitForApproval(asked, { interval: 0.2 });
  assert.equal((await person).status, 200);
  assert.equal(decision.status, "approved");
  assert.equal(decision.reason, "19 is fine");
  const ran = await quiver.call(
    THERMOSTAT,
    { celsius: 19 },
    { approval_id: asked.approvalId },
  );
  assert.equal(ran.outcome, "ran");

  const refused = await pending(quiver, 30);
  const denier = later(0.3, () => decide(refused.approvalId, "deny", "too warm"));
  const denied = await quiver.waitForApproval(refused.approvalId, { interval: 0.2 });
  await denier;
  assert.equal(denied.status, "denied");
  assert.equal(denied.reason, "too warm");

  report({ approved: asked.approvalId, denied: refused.approvalId });
});
