// A handshake-era MCP server over stdio, built with the TypeScript SDK that
// server-everything is built on, whose tools ask their client something in the
// middle of a call (sampling, elicitation, roots) whatever the client declared:
// what Quiver answers a server that asks anyway. tests/servers runs it as a
// stdio source.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";

const asks = {
  asks_sampling: {
    method: "sampling/createMessage",
    params: {
      messages: [{ role: "user", content: { type: "text", text: "Say hello" } }],
      maxTokens: 10,
    },
  },
  asks_elicitation: {
    method: "elicitation/create",
    params: {
      message: "Go ahead?",
      requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } },
    },
  },
  asks_roots: { method: "roots/list", params: {} },
};

const server = new McpServer({ name: "asking", version: "1.0.0" });
for (const [name, request] of Object.entries(asks)) {
  const description = `Asks its client ${request.method} mid-call.`;
  server.registerTool(
    name,
    { description, annotations: { readOnlyHint: true } },
    async () => {
      const answer = await server.server.request(request, ResultSchema);
      const text = `the client answered: ${JSON.stringify(answer)}`;
      return { content: [{ type: "text", text }] };
    },
  );
}
await server.connect(new StdioServerTransport());
