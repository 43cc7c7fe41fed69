// Checks the links between README.md and docs/*.md: every relative link names a file that exists, and every
// `#anchor` (on the same page or on another) names a heading of that page, as GitHub spells heading anchors.
// Run it with `npx tsx scripts/doc-links.ts` (it prints each broken link and exits 1 if there is one);
// test/unit/doc-links.test.ts runs the same check.

import {existsSync, readdirSync, readFileSync} from "node:fs";
import {dirname, join, relative, resolve} from "node:path";
import {fileURLToPath} from "node:url";

export interface BrokenLink {
  /** The page the link is on, relative to the root. */
  page: string;
  line: number;
  target: string;
  why: string;
}

/** The pages checked: README.md and every .md file under docs/. */
export function docPages(root: string): string[] {
  const docs = join(root, "docs");
  const pages = existsSync(docs) ? readdirSync(docs).filter((f) => f.endsWith(".md")).sort().map((f) => join("docs", f)) : [];
  return ["README.md", ...pages];
}

/** Lines outside fenced code blocks, with their 1-based numbers. */
function proseLines(text: string): {line: number; text: string}[] {
  const out: {line: number; text: string}[] = [];
  let fenced = false;
  text.split("\n").forEach((t, i) => {
    if (/^\s*```/.test(t)) fenced = !fenced;
    else if (!fenced) out.push({line: i + 1, text: t});
  });
  return out;
}

/**
 * GitHub's heading anchor: the heading's text without markup, lower-cased, with every character that is not a
 * letter, a digit, a space, `-` or `_` dropped, and spaces turned into `-`. Repeated headings get `-1`, `-2`, ...
 */
export function anchorOf(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .trim()
    .toLowerCase();
  return [...text].filter((c) => /[\p{L}\p{N} _-]/u.test(c)).join("").replace(/ /g, "-");
}

/** Every anchor a page defines. */
export function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const {text: t} of proseLines(text)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(t);
    if (!m) continue;
    const base = anchorOf(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Inline links `[text](target)` outside code blocks and outside inline code. */
function linksOf(text: string): {line: number; target: string}[] {
  const out: {line: number; target: string}[] = [];
  for (const {line, text: t} of proseLines(text)) {
    const prose = t.replace(/`[^`]*`/g, "");
    for (const m of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) out.push({line, target: m[1]!});
  }
  return out;
}

export function checkDocLinks(root: string): {pages: number; links: number; broken: BrokenLink[]} {
  const pages = docPages(root);
  const anchors = new Map<string, Set<string>>();
  const anchorsFor = (file: string) => {
    if (!anchors.has(file)) anchors.set(file, anchorsOf(readFileSync(file, "utf8")));
    return anchors.get(file)!;
  };
  const broken: BrokenLink[] = [];
  let links = 0;
  for (const page of pages) {
    const file = join(root, page);
    for (const {line, target} of linksOf(readFileSync(file, "utf8"))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      links++;
      const [path, anchor] = target.split("#", 2) as [string, string | undefined];
      const dest = path === "" ? file : resolve(dirname(file), decodeURIComponent(path));
      if (!existsSync(dest)) {
        broken.push({page, line, target, why: `no file ${relative(root, dest)}`});
        continue;
      }
      if (anchor === undefined) continue;
      if (!dest.endsWith(".md")) {
        broken.push({page, line, target, why: "an anchor into a file that is not markdown"});
      } else if (!anchorsFor(dest).has(anchor)) {
        broken.push({page, line, target, why: `${relative(root, dest)} has no heading with the anchor #${anchor}`});
      }
    }
  }
  return {pages: pages.length, links, broken};
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const {pages, links, broken} = checkDocLinks(root);
  for (const b of broken) process.stdout.write(`${b.page}:${b.line}: ${b.target}: ${b.why}\n`);
  process.stdout.write(`${pages} pages, ${links} internal links, ${broken.length} broken\n`);
  process.exit(broken.length > 0 ? 1 : 0);
}
