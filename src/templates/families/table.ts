// The table of model families in docs/families.md, generated from the family files so it cannot drift from them
// (test/unit/repo/families-table.test.ts checks that docs/families.md holds it verbatim).

import type {CallSyntax} from "../../core/call-syntax.ts";
import {shapeOf} from "../../syntax/index.ts";
import {FAMILIES} from "./index.ts";

/** One call, get_weather({"city": "Paris"}), as the family writes it. */
export function exampleCall(s: CallSyntax | null): string {
  if (s === null) return '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]} (taught in a system message)';
  return shapeOf(s).example(s);
}

/** A code span in a table cell: line breaks shown as \n, pipes escaped, doubled backticks around a text that has one. */
function cell(text: string): string {
  const t = text.replaceAll("\n", "\\n").replaceAll("|", "\\|");
  return t.includes("`") ? `\`\` ${t} \`\`` : `\`${t}\``;
}

export function familiesTableMarkdown(): string {
  const rows = ["| family | models | reasoning | a call is written | parallel calls |", "|---|---|---|---|---|"];
  for (const f of FAMILIES) {
    const models = f.name.replace(/ \(.*\)$/, "");
    const reasoning = f.reasoning ? `${cell(f.reasoning.open)} … ${cell(f.reasoning.close)}` : "—";
    rows.push(`| \`${f.id}\` | ${models} | ${reasoning} | ${cell(exampleCall(f.calls))} | ${f.parallelCalls ? "yes" : "one per reply"} |`);
  }
  return rows.join("\n") + "\n";
}
