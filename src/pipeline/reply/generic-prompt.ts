// The system text that teaches templates without a call syntax of their own the generic JSON form the parser
// reads (families/generic.ts).

export interface PromptTool {
  name: string;
  description?: string;
  parameters?: unknown;
}

/**
 * System text for templates with no tool support. It describes exactly the form the generic parser
 * accepts — the whole reply is {"tool_calls": [...]} — because anything else is read as plain text.
 */
export function genericToolsPrompt(tools: readonly PromptTool[], opts: {parallel: boolean}): string {
  const listed = tools.map((t) => {
    const entry: Record<string, unknown> = {name: t.name};
    if (t.description !== undefined) entry.description = t.description;
    entry.parameters = t.parameters ?? {type: "object", properties: {}};
    return JSON.stringify(entry);
  });
  const example = '{"tool_calls": [{"name": "<tool name>", "arguments": {<arguments as a JSON object>}}]}';
  return [
    "You can call the following tools. Each is described as JSON: its name, what it does, and a JSON schema of its arguments.",
    ...listed,
    "",
    "To call tools, reply with only this JSON object and nothing before or after it:",
    example,
    opts.parallel
      ? "The list may hold several calls; they are made in order."
      : "The list holds at most one call.",
    "The arguments must be a JSON object that matches the tool's schema.",
    "To answer normally, just write text.",
  ].join("\n");
}
