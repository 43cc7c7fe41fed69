// Responses tool entries and tool_choice → the route-neutral ToolInput list and choice that
// fields/tools.ts decides on. Function tools are flat here (`{type: "function", name, parameters,
// strict}`); a namespace wrapper (`{type: "namespace", name, description, tools: [...]}`, what Codex
// sends for MCP servers) is dropped and its functions offered as plain tools; hosted tools (web search,
// file search, MCP, custom, ...) are run by the vendor's servers, not here, so they are left out with a
// log line.

import {invalidField} from "../../../core/errors.ts";
import type {Logger} from "../../../observability/log.ts";
import type {ToolInput} from "../../fields/tools.ts";

export interface ResponsesTools {
  inputs: ToolInput[];
  /** Function name → the namespace it came from; a call of it names the namespace again. */
  namespaces: Map<string, string>;
  /** tool_choice in the form fields/tools.ts reads. */
  choice: unknown;
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * OpenAI documents `strict` as on by default for Responses function tools (unlike chat, where it is off):
 * an absent or null `strict` is true, and `strict: false` opts out.
 */
function functionInput(t: Obj, field: string): ToolInput {
  return {name: t.name, description: t.description, parameters: t.parameters, strict: t.strict ?? true, field, templateEntry: templateEntry(t)};
}

export function responsesTools(raw: unknown[] | null | undefined, choiceRaw: unknown, log: {logger: Logger; requestId: string}): ResponsesTools {
  const inputs: ToolInput[] = [];
  const namespaces = new Map<string, string>();
  const ignored: string[] = [];
  (raw ?? []).forEach((t, i) => {
    const field = `tools[${i}]`;
    if (!isObj(t) || typeof t.type !== "string") throw invalidField(`${field}.type`, "is required: a tool is {type: \"function\", name, parameters}");
    if (t.type === "function") {
      inputs.push(functionInput(t, field));
    } else if (t.type === "namespace") {
      if (typeof t.name !== "string" || t.name === "") throw invalidField(`${field}.name`, "is required for a namespace (a string)");
      if (!Array.isArray(t.tools)) throw invalidField(`${field}.tools`, "must be an array of the namespace's tools");
      t.tools.forEach((n, j) => {
        const nf = `${field}.tools[${j}]`;
        if (!isObj(n) || typeof n.type !== "string") throw invalidField(`${nf}.type`, "is required: a tool is {type: \"function\", name, parameters}");
        if (n.type !== "function") {
          ignored.push(`${nf}:${n.type}`);
          return;
        }
        inputs.push(functionInput(n, nf));
        if (typeof n.name === "string") namespaces.set(n.name, t.name as string);
      });
    } else {
      ignored.push(`${field}:${t.type}`);
    }
  });
  if (ignored.length > 0) log.logger.info("responses: tools this server does not run were left out", {id: log.requestId, tools: ignored.join(",")});
  const {choice, allowed} = readChoice(choiceRaw, new Set(inputs.map((t) => t.name).filter((n): n is string => typeof n === "string")));
  return {inputs: allowed ? inputs.filter((t) => allowed.has(t.name as string)) : inputs, namespaces, choice};
}

const CHOICE_RULE = "must be \"auto\", \"none\", \"required\", {type: \"function\", name} or {type: \"allowed_tools\", mode, tools}";

/**
 * Responses tool_choice. `{type: "allowed_tools"}` narrows the offered functions to the listed ones with
 * its mode; a choice that names a hosted tool is refused, since those tools were left out.
 */
function readChoice(raw: unknown, names: ReadonlySet<string>): {choice: unknown; allowed: Set<string> | null} {
  if (raw === undefined || raw === null || raw === "auto" || raw === "none" || raw === "required") return {choice: raw, allowed: null};
  if (!isObj(raw) || typeof raw.type !== "string") throw invalidField("tool_choice", CHOICE_RULE);
  if (raw.type === "function") {
    if (typeof raw.name !== "string") throw invalidField("tool_choice.name", "is required (the function to call)");
    if (!names.has(raw.name)) throw invalidField("tool_choice.name", `"${raw.name}" is not one of the request's function tools`);
    return {choice: {type: "function", name: raw.name}, allowed: null};
  }
  if (raw.type === "allowed_tools") {
    if (raw.mode !== "auto" && raw.mode !== "required") throw invalidField("tool_choice.mode", "must be \"auto\" or \"required\"");
    if (!Array.isArray(raw.tools)) throw invalidField("tool_choice.tools", "must be an array of {type: \"function\", name}");
    const allowed = new Set<string>();
    raw.tools.forEach((t, k) => {
      if (!isObj(t) || t.type !== "function") return; // hosted tools in the list: left out like the tools themselves
      if (typeof t.name !== "string" || !names.has(t.name)) {
        throw invalidField(`tool_choice.tools[${k}].name`, `${JSON.stringify(t.name)} is not one of the request's function tools`);
      }
      allowed.add(t.name);
    });
    return {choice: raw.mode, allowed};
  }
  throw invalidField("tool_choice.type",
    `"${raw.type}" names a tool this server does not run (only function tools are called); use "auto", "required" or {type: "function", name}`);
}

/** A Responses function tool as the chat template is given it: OpenAI's function-tool entry. */
function templateEntry(t: Obj): unknown {
  return {
    type: "function",
    function: {name: t.name, ...(typeof t.description === "string" ? {description: t.description} : {}),
      parameters: t.parameters ?? {type: "object", properties: {}}},
  };
}
