import {getLlama, LlamaLogLevel} from "node-llama-cpp";
import {nativeJinja} from "./src/engine/llama/internals.ts";
import {ChatTemplate} from "./src/templates/chat-template.ts";
import {bundledTemplate} from "./test/fixtures/templates/bundled.ts";
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const t = ChatTemplate.create(bundledTemplate("openai-gpt-oss-120b.jinja"), {bosToken: "<s>", eosToken: "</s>", origin: "x", native: nativeJinja(llama)});
const TOOLS = [{type: "function", function: {name: "get_weather", description: "Weather for a city", parameters: {type: "object", properties: {city: {type: "string"}, days: {type: "integer"}}, required: ["city"]}}}];
const msgs = [{role: "user" as const, content: "hi"}, {role: "assistant" as const, content: "", reasoning_content: "t", tool_calls: [{id: "call00001", type: "function" as const, function: {name: "get_weather", arguments: '{"city":"Paris"}'}}]}];
for (const tools of [undefined, TOOLS]) { try { console.log(t.render(msgs, {addGenerationPrompt: false, continueFinalMessage: false, tools}).text.slice(-100)); } catch (e) { console.log("ERR", (e as Error).message, (e as Error).stack?.slice(0, 600)); } }
