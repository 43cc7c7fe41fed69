// Streaming parsers for a reply's parts: reasoning, content and tool calls.

export {ReplyParser} from "./parser.ts";
export {detectToolSyntax, genericToolsPrompt} from "./syntax.ts";
export type {PromptTool} from "./syntax.ts";
export type {ReasoningMarkers, ReplyMode, ReplyPart, ReplyParserOptions, ToolSpec, ToolSyntax} from "./types.ts";
