// Streaming parsers for a reply's parts: reasoning, content and tool calls.

export {createReplyParser, ReplyParser} from "./parser.ts";
export {genericToolsPrompt} from "./generic-prompt.ts";
export type {PromptTool} from "./generic-prompt.ts";
export type {ReasoningMarkers, ReplyMode, ReplyPart, ReplyParserOptions, ReplyReader, ToolSpec} from "./types.ts";
