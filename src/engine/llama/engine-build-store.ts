// Keeps engine builds from source (SVC_ENGINE_BUILD=openmp) outside node_modules. node-llama-cpp writes a
// source build into its own package folder (llama/localBuilds/<name>), which `npm ci` deletes, so without this
// every reinstall paid the ~5-minute build again. After a build is loaded it is copied into the store (under
// SVC_MODELS_DIR, next to the exactness probes); before the library is asked for a build, a stored one that
// the package folder lacks is copied back. A build is complete when it has its addon, its metadata and the
// library's done marker (the three files node-llama-cpp itself checks); nothing else is needed to load it
// (measured: the folder's Release/ and buildDone.status alone load with the source tree removed).

import {access, cp, mkdir, readdir, rename, rm} from "node:fs/promises";
import {join} from "node:path";
import {DONE_MARKER, localBuildsDirectory, LOCAL_BUILD_FILES} from "./internals.ts";

/** What was copied, for the start log. */
export interface BuildCopies {
  restored: string[];
  kept: string[];
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

async function complete(folder: string): Promise<boolean> {
  for (const file of LOCAL_BUILD_FILES) if (!(await exists(join(folder, file)))) return false;
  return true;
}

async function completeBuilds(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = (await readdir(dir, {withFileTypes: true})).filter((e) => e.isDirectory() && !e.name.endsWith(".staging")).map((e) => e.name);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const name of names) if (await complete(join(dir, name))) out.push(name);
  return out;
}

/**
 * Copies a complete build folder's files (not its intermediate objects) to `to`, through a staging folder
 * moved into place at the end, so an interrupted copy never looks like a complete build.
 */
async function copyBuild(from: string, to: string): Promise<void> {
  const staging = `${to}.staging`;
  await rm(staging, {recursive: true, force: true});
  await mkdir(staging, {recursive: true});
  // Release/ holds the addon, its metadata and the shared libraries it loads; the marker sits beside it.
  await cp(join(from, "Release"), join(staging, "Release"), {recursive: true});
  await cp(join(from, DONE_MARKER), join(staging, DONE_MARKER));
  await rm(to, {recursive: true, force: true});
  await rename(staging, to);
}

/** Copies the complete builds in `from` that `to` lacks; returns their names. */
async function copyMissing(from: string, to: string): Promise<string[]> {
  const copied: string[] = [];
  const present = new Set(await completeBuilds(to));
  for (const name of await completeBuilds(from)) {
    if (present.has(name)) continue;
    await mkdir(to, {recursive: true});
    await copyBuild(join(from, name), join(to, name));
    copied.push(name);
  }
  return copied;
}

/** Copies stored builds the package folder lacks back into it. */
export function restoreBuilds(store: string, local = localBuildsDirectory()): Promise<string[]> {
  return copyMissing(store, local);
}

/** Copies the package folder's complete builds that the store lacks into it. */
export function keepBuilds(store: string, local = localBuildsDirectory()): Promise<string[]> {
  return copyMissing(local, store);
}
