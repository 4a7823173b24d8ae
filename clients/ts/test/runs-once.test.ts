/**
 * A call whose tool ran but whose outcome Quiver could not record (pytest
 * breaks the database's sessions while the upstream runs it) is never sent
 * again: the 503 says it is not retryable, and the client throws it at once.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { Quiver, Unavailable } from "@quiver/ai-sdk";

import { key, report, url } from "./live.js";

test("a call that ran but was not recorded is thrown at once, never sent again", async () => {
  let sent = 0;
  const counting: typeof fetch = (input, init) => {
    sent += 1;
    return fetch(input, init);
  };
  const quiver = new Quiver({ url: url(), key: key(), fetch: counting });
  const error = await quiver
    .call("weather.send_note", { to: "ann", text: "the report is late" })
    .catch((e: unknown) => e);
  assert.equal(sent, 1);
  assert.ok(error instanceof Unavailable, String(error));
  assert.equal(error.retryable, false);
  assert.equal(error.retryAfter, undefined);
  assert.match(error.detail, /could not be recorded/);
  report({ sent, detail: error.detail });
});
