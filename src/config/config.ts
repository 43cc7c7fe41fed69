// Reads the environment once, against the settings table. A bad value stops the start with one line
// per problem naming the setting, the value and the rule.

import {homedir} from "node:os";
import {SETTINGS, flagOf, type Setting, type SettingKey} from "./settings.ts";

type ValueOf<K extends SettingKey> = (typeof SETTINGS)[K] extends Setting<infer T> ? T : never;
export type Config = {readonly [K in SettingKey]: ValueOf<K>};

/** SVC_BODY_LIMIT_MB's default with SVC_MMPROJ. */
export const VISION_BODY_LIMIT_MB = 50;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join("\n"));
  }
}

function expandHome(path: string): string {
  return path === "~" || path.startsWith("~/") ? homedir() + path.slice(1) : path;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [key, setting] of Object.entries(SETTINGS) as [SettingKey, Setting][]) {
    const raw = env[setting.name];
    if (raw === undefined || raw === "") {
      out[key] = setting.fallback();
      continue;
    }
    try {
      out[key] = setting.parse(raw);
    } catch {
      problems.push(`${setting.name}=${JSON.stringify(raw)}: ${setting.rule}`);
    }
  }
  const unknown = Object.keys(env).filter((k) => k.startsWith("SVC_") && !Object.values(SETTINGS).some((s) => s.name === k));
  for (const name of unknown) problems.push(`${name}: not a setting of this server (see the settings table in docs/operations.md)`);
  if (out.speculation === "on" && out.flashAttention === false) {
    problems.push("SVC_SPECULATION=on needs SVC_FLASH_ATTENTION=1: with flash attention off, a draft row changes the numbers of the row before it, " +
      "so greedy output would no longer be exact (use SVC_SPECULATION=off or turn flash attention on)");
  }
  if (out.engine !== undefined && out.npuModels !== undefined) {
    problems.push("SVC_NPU_MODELS needs the in-process engine: side models run beside it, not on remote replicas (unset SVC_ENGINE or SVC_NPU_MODELS)");
  }
  if (out.engine !== undefined && out.mmproj !== undefined) {
    problems.push("SVC_MMPROJ runs the main model in svc's own llama-server child, so it cannot be used with SVC_ENGINE " +
      "(start the replicas with --mmproj instead: svc reads pictures on replicas that report vision)");
  }
  if (out.llamaServer !== undefined && out.mmproj === undefined) {
    problems.push("SVC_LLAMA_SERVER names the binary svc runs for SVC_MMPROJ; set SVC_MMPROJ too, or unset SVC_LLAMA_SERVER");
  }
  if (typeof out.bodyTimeout === "number" && typeof out.headersTimeout === "number" && out.bodyTimeout < out.headersTimeout) {
    problems.push(`SVC_BODY_TIMEOUT_S=${out.bodyTimeout} is below SVC_HEADERS_TIMEOUT_S=${out.headersTimeout}: the whole request ` +
      "cannot take less time than its headers (raise SVC_BODY_TIMEOUT_S or lower SVC_HEADERS_TIMEOUT_S)");
  }
  if (problems.length > 0) throw new ConfigError(problems);
  // Pictures travel as base64 inside the JSON body: a model that reads them gets room for them unless a limit was set.
  if (out.mmproj !== undefined && (env.SVC_BODY_LIMIT_MB === undefined || env.SVC_BODY_LIMIT_MB === "")) out.bodyLimitMb = VISION_BODY_LIMIT_MB;
  out.modelsDir = expandHome(out.modelsDir as string);
  if (typeof out.cacheDir === "string") out.cacheDir = expandHome(out.cacheDir);
  if (typeof out.chatTemplate === "string") out.chatTemplate = expandHome(out.chatTemplate);
  if (typeof out.mmproj === "string") out.mmproj = expandHome(out.mmproj);
  if (typeof out.llamaServer === "string") out.llamaServer = expandHome(out.llamaServer);
  return out as Config;
}

/** The settings table of docs/operations.md, generated from SETTINGS. */
export function settingsTableMarkdown(): string {
  const rows = Object.values(SETTINGS).map((s: Setting) => {
    const doc = s.pending ? `${s.doc} *Read and validated now; takes effect with ${s.pending}.*` : s.doc;
    const flags = [...(s.aliases ?? []), flagOf(s)].map((f) => `\`${f}\``).join(" ");
    return `| \`${s.name}\` | ${flags} | ${s.shown} | ${doc} |`;
  });
  return ["| Setting | Flag | Default | What it does |", "|---|---|---|---|", ...rows].join("\n");
}
