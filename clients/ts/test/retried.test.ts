/**
 * What the server marks retryable is sent again: pytest has the database
 * refuse connections for a moment, so the first attempt is a 503 that did
 * nothing (`retryable`, `Retry-After`); the client waits it out and the call
 * runs, once.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { Quiver } from "@quiver/ai-sdk";

import { key, report, url } from "./live.js";

test("a 503 that did nothing is waited out, then the call runs once", async () => {
  const statuses: number[] = [];
  const counting: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    statuses.push(response.status);
    return response;
  };
  const quiver = new Quiver({ url: url(), key: key(), fetch: counting });
  const started = Date.now();
  const answer = await quiver.call("weather.get_forecast", { city: "Oslo" });
  assert.equal(answer.outcome, "ran");
  assert.deepEqual(statuses, [503, 200]);
  assert.ok(Date.now() - started >= 4500, "the server's Retry-After was waited");
  report({ statuses });
});
