// The command line's flags, generated from the settings table (config/settings.ts): every SVC_* setting has one
// long flag, its name without the prefix, in lower case with dashes (SVC_CTX_SIZE is --ctx-size), plus the
// llama-server spellings the table gives where they mean the same thing (-c). A flag is turned into the setting's environment value and
// parsed by the setting's own rule, so a flag and its variable cannot disagree about what is valid; flags win
// over the environment.

import {SETTINGS, flagOf, type Setting, type SettingKey} from "../config/settings.ts";

export interface Flag {
  key: SettingKey;
  setting: Setting;
  /** The long spelling, `--ctx-size`. */
  long: string;
  /** Other spellings (llama-server's), `-c`. */
  aliases: string[];
  /** On/off settings take no value: `--fork` is on, `--no-fork` off, `--fork=0` also works. */
  boolean: boolean;
}

/** Whether the setting is an on/off one: its parser takes exactly the flag words. */
function isBoolean(setting: Setting): boolean {
  try {
    return setting.parse("1") === true && setting.parse("0") === false;
  } catch {
    return false;
  }
}

export const FLAGS: Flag[] = (Object.entries(SETTINGS) as [SettingKey, Setting][]).map(([key, setting]) => ({
  key,
  setting,
  long: flagOf(setting),
  aliases: setting.aliases ?? [],
  boolean: isBoolean(setting),
}));

const BY_SPELLING = new Map<string, Flag>(FLAGS.flatMap((f) => [[f.long, f] as const, ...f.aliases.map((a) => [a, f] as const)]));

export class CommandLineError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join("\n"));
  }
}

export type Command = {kind: "help"} | {kind: "version"} | {kind: "serve"; env: Record<string, string>};

/**
 * Reads `svc [serve] [MODEL] [flags]`. Returns the environment values the flags set (SVC_* names), which the
 * caller lays over process.env; throws CommandLineError naming every unknown flag and every bad value with its rule.
 */
export function parseCommandLine(argv: readonly string[]): Command {
  const args = [...argv];
  if (args[0] === "serve") args.shift();
  else if (args[0] === "help") return {kind: "help"};
  else if (args[0] === "version") return {kind: "version"};
  if (args.some((a) => a === "--help" || a === "-h")) return {kind: "help"};
  if (args.some((a) => a === "--version")) return {kind: "version"};
  const env: Record<string, string> = {};
  const from: Record<string, string> = {};
  const problems: string[] = [];
  const set = (flag: Flag, spelling: string, value: string) => {
    const earlier = from[flag.setting.name];
    if (earlier !== undefined) {
      problems.push(`${spelling}: sets ${flag.setting.name}, which ${earlier} already set; give it once`);
      return;
    }
    try {
      flag.setting.parse(value);
    } catch {
      problems.push(`${spelling} ${JSON.stringify(value)}: ${flag.setting.rule} (${flag.setting.name})`);
      return;
    }
    env[flag.setting.name] = value;
    from[flag.setting.name] = spelling;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith("-") || arg === "-") {
      // The one positional argument is the model, as in `ollama run MODEL` and `vllm serve MODEL`.
      if (from.SVC_MODEL === "MODEL") {
        problems.push(`${JSON.stringify(arg)}: a second MODEL; svc serves one main model (the first given is ${JSON.stringify(env.SVC_MODEL)})`);
        continue;
      }
      set(FLAGS.find((f) => f.key === "model")!, "MODEL", arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const spelling = eq > 0 ? arg.slice(0, eq) : arg;
    const inline = eq > 0 ? arg.slice(eq + 1) : undefined;
    const negated = spelling.startsWith("--no-") ? BY_SPELLING.get(`--${spelling.slice(5)}`) : undefined;
    if (negated?.boolean && inline === undefined) {
      set(negated, spelling, "0");
      continue;
    }
    const flag = BY_SPELLING.get(spelling);
    if (!flag) {
      problems.push(`${spelling}: not a flag of svc${suggestion(spelling)} (svc --help lists every flag)`);
      // Its value, if it has one, is not taken for the model.
      if (inline === undefined && i + 1 < args.length && !args[i + 1]!.startsWith("-")) i++;
      continue;
    }
    if (inline !== undefined) {
      set(flag, spelling, inline);
    } else if (flag.boolean) {
      set(flag, spelling, "1");
    } else if (i + 1 < args.length) {
      set(flag, spelling, args[++i]!);
    } else {
      problems.push(`${spelling}: needs a value; ${flag.setting.rule}`);
    }
  }
  if (problems.length > 0) throw new CommandLineError(problems);
  return {kind: "serve", env};
}

/** ", did you mean --ctx-size?" for a spelling one or two edits away from a flag, else "". */
function suggestion(spelling: string): string {
  let best: {flag: string; d: number} | null = null;
  for (const name of BY_SPELLING.keys()) {
    const d = editDistance(spelling, name);
    if (d <= 2 && (!best || d < best.d)) best = {flag: name, d};
  }
  return best ? `, did you mean ${best.flag}?` : "";
}

function editDistance(a: string, b: string): number {
  let row = Array.from({length: b.length + 1}, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}
