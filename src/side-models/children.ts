// The supervised children's registry, which /health (`children`) and /metrics read, and where a child script is found.

import {extname} from "node:path";
import {fileURLToPath} from "node:url";
import type {ChildStatus} from "../core/child-status.ts";
import type {ChildSupervisor} from "./child-supervisor.ts";

/** The supervised children /health and /metrics read, one entry per child. */
export class ChildRegistry {
  private readonly children = new Set<ChildSupervisor>();

  add(child: ChildSupervisor): void {
    this.children.add(child);
  }

  list(): ChildStatus[] {
    return [...this.children].map((c) => c.status());
  }
}

/**
 * A child script beside `moduleUrl`, with that module's own extension: `.ts` when the server runs from source
 * (through tsx, which the child then loads by absolute URL: not the parent's execArgv, which under `node --test`
 * carries test-runner flags, nor a bare name resolved from the server's cwd), `.js` from a compiled build (no loader).
 */
export function childScript(moduleUrl: string, name: string): {path: string; execArgv: string[]} {
  const ext = extname(fileURLToPath(moduleUrl));
  const path = fileURLToPath(new URL(`./${name}${ext}`, moduleUrl));
  return {path, execArgv: ext === ".ts" ? ["--import", import.meta.resolve("tsx")] : []};
}
