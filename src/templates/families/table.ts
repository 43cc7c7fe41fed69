// The table of model families in docs/families.md, generated from the family files so it cannot drift from them
// (test/unit/repo/families-table.test.ts checks that docs/families.md holds it verbatim).

import {CALL_INDEX, leadIdOf, type CallSyntax} from "../../core/call-syntax.ts";
import {FAMILIES} from "./index.ts";

/** One call, get_weather({"city": "Paris"}), as the family writes it. */
export function exampleCall(s: CallSyntax | null): string {
  if (s === null) return '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]} (taught in a system message)';
  const args = '{"city": "Paris"}';
  switch (s.shape) {
    case "json": {
      const id = s.idKey ? `"${s.idKey}": "0", ` : "";
      const obj = s.keyedByName ? `{"get_weather": ${args}}` : `{${id}"${s.nameKey}": "get_weather", "${s.argsKey}": ${args}}`;
      if (s.opener === null) return s.start?.consumed ? `{"tool_calls": [${obj}]}` : obj;
      return `${s.opener}${s.pad}${s.list ? `[${obj}]` : obj}${s.pad}${s.close}`;
    }
    case "named":
      return `${s.section?.open ?? ""}${s.open}${s.leadId !== undefined ? leadIdOf(0) + s.leadId : ""}${s.namePrefix}get_weather` +
        `${s.nameIndex ? ":0" : ""}${s.nameEnd}${args}${s.argsEnd}${s.close}${s.section?.close ?? ""}`;
    case "xml": {
      const keyEnd = typeof s.keyEnd === "string" ? s.keyEnd : s.keyEnd.string;
      const name = `${s.open}get_weather${s.nameEnd.replace(CALL_INDEX, "1")}`;
      return `${s.section?.open ?? ""}${name}${s.keyOpen}city${keyEnd}Paris${s.valueEnd}${s.close}${s.section?.close ?? ""}`;
    }
    case "custom":
      return s.kind === "harmony"
        ? `<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>${args}`
        : '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>';
  }
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
