/**
 * The TypeScript MCP SDKs against Quiver's /mcp, nothing of theirs mocked:
 * `@modelcontextprotocol/sdk` (v1, the handshake-era `initialize`) and
 * `@modelcontextprotocol/client` (v2) in its legacy mode and in `auto`, which
 * speaks the 2026-07-28 protocol (`server/discover`). Each lists Quiver's
 * tools, searches, and calls a found tool on the real upstream MCP server.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { key, report, url } from "./live.js";

const QUIVER_TOOLS = ["search_tools", "get_tool_details", "call_tool"];
const CLIENT_INFO = { name: "quiver-ts-test", version: "1.0.0" };

/** What every era must do the same: the calls both SDKs share. */
interface McpSession {
  listTools(): Promise<{ tools: Array<{ name: string }> }>;
  callTool(params: {
    name: string;
    arguments?: Record<string, unknown>;
  }): Promise<unknown>;
  close(): Promise<void>;
}

interface ToolAnswer {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  content: Array<{ type: string; text?: string }>;
  _meta?: Record<string, unknown>;
}

const headers = (bearer: string): RequestInit => ({
  headers: { Authorization: `Bearer ${bearer}` },
});
const endpoint = (): URL => new URL(`${url()}/mcp`);

async function v1(
  bearer = key(),
): Promise<{ client: McpSession; era: string | undefined }> {
  const client = new ClientV1(CLIENT_INFO);
  await client.connect(new TransportV1(endpoint(), { requestInit: headers(bearer) }));
  const transport = client.transport as TransportV1 | undefined;
  return { client, era: transport?.protocolVersion };
}

async function v2(
  mode: "legacy" | "auto",
  bearer = key(),
): Promise<{ client: McpSession; era: string | undefined }> {
  const client = new ClientV2(CLIENT_INFO, { versionNegotiation: { mode } });
  await client.connect(new TransportV2(endpoint(), { requestInit: headers(bearer) }));
  return { client, era: client.getNegotiatedProtocolVersion() };
}

const SDKS = [
  { name: "@modelcontextprotocol/sdk v1", open: () => v1(), modern: false },
  {
    name: "@modelcontextprotocol/client v2, legacy",
    open: () => v2("legacy"),
    modern: false,
  },
  {
    name: "@modelcontextprotocol/client v2, auto",
    open: () => v2("auto"),
    modern: true,
  },
];
const seen: Record<string, string | undefined> = {};
const selections: string[] = [];
const calls: string[] = [];

for (const sdk of SDKS) {
  test(`${sdk.name}: lists Quiver's three tools, searches, and calls the tool found`, async () => {
    const { client, era } = await sdk.open();
    try {
      seen[sdk.name] = era;
      assert.equal(era === "2026-07-28", sdk.modern, `negotiated ${era}`);
      const listed = await client.listTools();
      assert.deepEqual(
        listed.tools.map((tool) => tool.name),
        QUIVER_TOOLS,
      );

      const found = (await client.callTool({
        name: "search_tools",
        arguments: { query: "weather forecast for Lisbon", max_results: 2 },
      })) as ToolAnswer;
      assert.ok(!found.isError, JSON.stringify(found.content));
      const structured = found.structuredContent as {
        selection_id: string;
        tools: Array<{ name: string; inputSchema: object }>;
      };
      assert.equal(structured.tools[0]?.name, "weather_get_forecast");
      selections.push(structured.selection_id);

      const ran = (await client.callTool({
        name: "call_tool",
        arguments: {
          name: "weather.get_forecast",
          arguments: { city: "Lisbon", days: 1 },
          selection_id: structured.selection_id,
        },
      })) as ToolAnswer;
      assert.ok(!ran.isError, JSON.stringify(ran.content));
      assert.deepEqual(ran.structuredContent, {
        city: "Lisbon",
        forecast: ["day 1: sunny, 21 C"],
      });
      calls.push(String(ran._meta?.["quiver/call_id"]));

      // The found tool by its own name, as a plain MCP client calls it.
      const direct = (await client.callTool({
        name: "weather.get_forecast",
        arguments: { city: "Porto" },
      })) as ToolAnswer;
      assert.ok(!direct.isError, JSON.stringify(direct.content));
      assert.equal(direct.structuredContent?.["city"], "Porto");
      calls.push(String(direct._meta?.["quiver/call_id"]));
    } finally {
      await client.close();
    }
  });
}

test("a bad key is refused at connect by every SDK, never a hang", async () => {
  const opens = [
    () => v1("qv_bad_key"),
    () => v2("legacy", "qv_bad_key"),
    () => v2("auto", "qv_bad_key"),
  ];
  for (const open of opens) {
    await assert.rejects(open(), (error: Error) =>
      /401|nauthori[sz]ed/i.test(String(error)),
    );
  }
});

test("report the sessions, for the audit check", () => {
  report({ eras: seen, selections, calls });
});
