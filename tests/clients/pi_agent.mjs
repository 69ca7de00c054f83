// A small agent loop on @mariozechner/pi-ai (the library behind DeepSeek Harness's adapter), as a harness
// would drive it: a custom model whose baseUrl is modelpool, one `write_file` tool, `stream` for the first
// turn (its events are counted), the tool run locally, then `complete` for the turn after the tool result.
//
//   node pi_agent.mjs '{"api": "openai-completions", "baseUrl": "http://127.0.0.1:4000/v1",
//                       "model": "agent-m", "apiKey": "…", "prompt": "…"}'
//
// Prints one JSON line: {events, first, final, wrote}. Exit 0 even when a turn fails (the test asserts).
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { complete, stream, Type } from "@mariozechner/pi-ai";

const args = JSON.parse(process.argv[2]);
const model = {
  id: args.model,
  name: args.model,
  api: args.api,
  provider: "modelpool",
  baseUrl: args.baseUrl,
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128000,
  maxTokens: 1024,
};
const tools = [
  {
    name: "write_file",
    description: "Write a text file in the working directory.",
    parameters: Type.Object({ path: Type.String(), content: Type.String() }),
  },
];
const context = {
  systemPrompt: "You are a coding agent.",
  messages: [{ role: "user", content: args.prompt, timestamp: Date.now() }],
  tools,
};
const options = { apiKey: args.apiKey, maxTokens: 1024 };

const events = {};
const s = stream(model, context, options);
for await (const ev of s) events[ev.type] = (events[ev.type] ?? 0) + 1;
const first = await s.result();
context.messages.push(first);

const wrote = [];
for (const part of first.content) {
  if (part.type !== "toolCall" || part.name !== "write_file") continue;
  const path = resolve(process.cwd(), part.arguments.path);
  writeFileSync(path, part.arguments.content);
  wrote.push(path);
  context.messages.push({
    role: "toolResult",
    toolCallId: part.id,
    toolName: part.name,
    content: [{ type: "text", text: `wrote ${part.arguments.path}` }],
    isError: false,
    timestamp: Date.now(),
  });
}
const final = wrote.length ? await complete(model, context, options) : null;
process.stdout.write(JSON.stringify({ events, first, final, wrote }) + "\n");
