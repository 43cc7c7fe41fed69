// A Chromium that comes from the npm registry, so the browser tests need no system browser: @sparticuz/chromium ships a
// headless-shell build as brotli files (bin/chromium.br, and bin/al2023.tar.br with the NSS libraries it links against).
// We unpack them once into the cache, ~/.cache/svc/chromium/<package version>/, beside the models. The package's own
// executablePath() is not used: it writes /tmp/chromium in place for every version alike, so a second process could
// start a half-written binary and an upgrade could keep running an old one. Here a version unpacks into a private
// folder that is renamed into place whole. CHROMIUM_PATH (a browser of one's own) overrides all of this.

import {spawnSync} from "node:child_process";
import {createReadStream, createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync} from "node:fs";
import {createRequire} from "node:module";
import {dirname, join} from "node:path";
import {pipeline} from "node:stream/promises";
import {brotliDecompressSync, createBrotliDecompress} from "node:zlib";
import {defaultModelsDir} from "../src/models/resolve.ts";

export interface ChromiumBuild {
  executable: string;
  /** Environment for the browser process: the bundled libraries first on the loader's path (empty for CHROMIUM_PATH). */
  env: Record<string, string>;
  /** Where it came from, for error messages. */
  source: string;
}

/** The installed @sparticuz/chromium: its folder and version (its package.json is not exported, so found by path). */
function sparticuz(): {dir: string; version: string} {
  const entry = createRequire(import.meta.url).resolve("@sparticuz/chromium"); // <pkg>/build/index.js
  const dir = dirname(dirname(entry));
  const {version} = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {version: string};
  return {dir, version};
}

/** Unpacks chromium.br and the libraries into `into` (a fresh folder). */
async function unpack(bin: string, into: string): Promise<void> {
  await pipeline(createReadStream(join(bin, "chromium.br")), createBrotliDecompress(), createWriteStream(join(into, "chromium"), {mode: 0o755}));
  // The libraries' tarball is small; Debian's tar (an essential package) reads it from stdin. It holds lib/*.so*.
  const tar = spawnSync("tar", ["-x", "-C", into], {input: brotliDecompressSync(readFileSync(join(bin, "al2023.tar.br")))});
  if (tar.status !== 0) throw new Error(`unpacking al2023.tar.br failed: ${tar.stderr?.toString() ?? tar.error?.message}`);
  if (!existsSync(join(into, "lib", "libnss3.so"))) throw new Error("al2023.tar.br held no lib/libnss3.so");
}

let pending: Promise<ChromiumBuild> | undefined;

/** The browser to launch: CHROMIUM_PATH if set, else @sparticuz/chromium's build, unpacked into the cache on first use. */
export function chromiumBuild(): Promise<ChromiumBuild> {
  pending ??= locate();
  return pending;
}

async function locate(): Promise<ChromiumBuild> {
  const own = process.env.CHROMIUM_PATH;
  if (own) {
    if (!existsSync(own)) throw new Error(`CHROMIUM_PATH=${own} does not exist`);
    return {executable: own, env: {}, source: `CHROMIUM_PATH=${own}`};
  }
  const {dir, version} = sparticuz();
  const target = join(dirname(defaultModelsDir()), "chromium", version);
  const build = (): ChromiumBuild => ({
    executable: join(target, "chromium"),
    env: {LD_LIBRARY_PATH: [join(target, "lib"), process.env.LD_LIBRARY_PATH].filter(Boolean).join(":")},
    source: `@sparticuz/chromium ${version} unpacked in ${target}`,
  });
  if (existsSync(join(target, "chromium"))) return build();
  mkdirSync(dirname(target), {recursive: true});
  const staging = mkdtempSync(`${target}.unpacking-`);
  try {
    await unpack(join(dir, "bin"), staging);
    renameSync(staging, target);
  } catch (e) {
    rmSync(staging, {recursive: true, force: true});
    // Another process unpacked the same version first (the rename found the folder there): use theirs.
    if (!existsSync(join(target, "chromium"))) throw e;
  }
  return build();
}
