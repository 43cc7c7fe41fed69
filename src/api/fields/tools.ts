// Tools on a request, route-neutral: each route maps its own tool shape onto ToolInput, then this checks
// names and the choice, and decides per strict tool whether its arguments can be enforced (the spec's
// "Strict tools" rule 5). A strict tool that cannot be enforced is still served, called as without
// strict, logged and counted; that is the spec's rule, not an error.

import {invalidField} from "../../core/errors.ts";
import type {ToolChoice, ToolDefinition, ToolsRequest} from "../../core/generation.ts";
import {isToolName, MAX_STRICT_PARAMETERS, strictEligibility, type Eligibility} from "../../syntax/index.ts";
import type {Logger} from "../../observability/log.ts";
import type {Counters} from "../../observability/counters.ts";

/** More tools than this on one request: every strict tool is served unenforced. */
export const MAX_STRICT_TOOLS = 128;
export {MAX_STRICT_PARAMETERS};
/** Why strict tools are served unenforced on a request that holds a picture (the spec's Strict tools rule 5). */
export const PICTURE_REASON = "the request holds a picture";

export interface ToolInput {
  name: unknown;
  description?: unknown;
  parameters?: unknown;
  strict?: unknown;
  /** How the route names this tool, e.g. "tools[2].function". */
  field: string;
  /** The tool as the chat template is given it (ToolDefinition.templateEntry). */
  templateEntry: unknown;
}

export interface ToolsContext {
  /** SVC_STRICT_TOOLS */
  strictEnabled: boolean;
  /** Reasons every strict tool of the request goes unenforced (images, logprobs). */
  requestReasons: string[];
  logger: Logger;
  counters: Counters;
  requestId: string;
  /** The model's verdict, by its family's call syntax (DecodeContext.strictEligibility); absent: no particular syntax. */
  eligibility?: (parameters: unknown) => Eligibility;
}

export function decodeTools(inputs: ToolInput[], choiceRaw: unknown, parallelRaw: unknown, fields: {choice: string; parallel: string},
  ctx: ToolsContext): ToolsRequest | null {
  if (inputs.length === 0) {
    if (choiceRaw !== undefined && choiceRaw !== null && choiceRaw !== "none" && choiceRaw !== "auto") {
      throw invalidField(fields.choice, "needs tools: the request offers none");
    }
    return null;
  }
  const seen = new Set<string>();
  const tools: ToolDefinition[] = inputs.map((t) => {
    if (!isToolName(t.name)) {
      throw invalidField(`${t.field}.name`, "must be 1 to 64 letters, digits, underscores or dashes");
    }
    if (seen.has(t.name)) throw invalidField(`${t.field}.name`, `"${t.name}" names two tools; tool names must be unique`);
    seen.add(t.name);
    if (t.description !== undefined && t.description !== null && typeof t.description !== "string") {
      throw invalidField(`${t.field}.description`, "must be a string");
    }
    const params = t.parameters ?? undefined;
    if (params !== undefined && (typeof params !== "object" || params === null || Array.isArray(params))) {
      throw invalidField(`${t.field}.parameters`, "must be a JSON schema object");
    }
    if (t.strict !== undefined && t.strict !== null && typeof t.strict !== "boolean") throw invalidField(`${t.field}.strict`, "must be a boolean");
    return {name: t.name, ...(typeof t.description === "string" ? {description: t.description} : {}), parameters: params,
      strict: t.strict === true, enforced: false, templateEntry: t.templateEntry};
  });

  const choice = decodeChoice(choiceRaw, fields.choice, seen);
  if (parallelRaw !== undefined && parallelRaw !== null && typeof parallelRaw !== "boolean") throw invalidField(fields.parallel, "must be a boolean");
  const parallel = parallelRaw !== false;

  const strict = tools.filter((t) => t.strict);
  if (strict.length > 0) {
    const requestReasons = [...ctx.requestReasons];
    if (!ctx.strictEnabled) requestReasons.push("strict tools are turned off on this server (SVC_STRICT_TOOLS=0)");
    if (tools.length > MAX_STRICT_TOOLS) requestReasons.push(`the request has ${tools.length} tools (at most ${MAX_STRICT_TOOLS} are enforced)`);
    const eligibility = ctx.eligibility ?? ((parameters: unknown) => strictEligibility(parameters));
    for (const t of strict) {
      const verdict = requestReasons.length > 0 ? {enforce: false as const, reason: requestReasons.join("; ")}
        : eligibility(t.parameters ?? {type: "object", properties: {}});
      if (verdict.enforce) {
        t.enforced = true;
        continue;
      }
      // SVC_STRICT_TOOLS=0 is the operator's choice, not a tool the server failed to enforce.
      if (ctx.strictEnabled) {
        ctx.counters.strictToolsUnenforced++;
        ctx.logger.warn("strict tool served without enforcement", {id: ctx.requestId, tool: t.name, reason: verdict.reason});
      }
    }
  }
  return {tools, choice, parallel};
}

function decodeChoice(raw: unknown, field: string, names: ReadonlySet<string>): ToolChoice {
  if (raw === undefined || raw === null || raw === "auto") return {kind: "auto"};
  if (raw === "none") return {kind: "none"};
  if (raw === "required") return {kind: "required"};
  if (typeof raw === "object" && !Array.isArray(raw)) {
    const o = raw as {type?: unknown; function?: {name?: unknown}; name?: unknown};
    const name = o.type === "function" ? (o.function?.name ?? o.name) : undefined;
    if (typeof name !== "string") throw invalidField(field, `must be "auto", "none", "required" or {type: "function", function: {name}}`);
    if (!names.has(name)) throw invalidField(`${field}.function.name`, `"${name}" is not one of the request's tools`);
    return {kind: "named", name};
  }
  throw invalidField(field, `must be "auto", "none", "required" or {type: "function", function: {name}}`);
}
