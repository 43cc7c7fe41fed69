// Builds llama-server once from the llama.cpp source that node-llama-cpp bundles (its gitRelease.bundle), into
// the cache directory, and reuses it next time. The server runs it as its own child for pictures (SVC_MMPROJ:
// node-llama-cpp has no multimodal support), and it is the anchor of every performance figure: the same
// llama.cpp as our engine library, driven by its own server.
//
// Portable flags: no native tuning (GGML_NATIVE=OFF), only the instruction sets this CPU reports in
// /proc/cpuinfo (AVX-512 only where present). The build goes to a staging folder and is moved into place
// only when complete, so a half-built binary never looks like a finished one.

import {spawnSync} from "node:child_process";
import {existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync} from "node:fs";
import {cpus, homedir} from "node:os";
import {join} from "node:path";
import {fileURLToPath} from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
// From a build (dist/models/) the package root is two folders up as well.
const LLAMA_DIR = join(ROOT, "node_modules", "node-llama-cpp", "llama");

export interface LlamaServerBuild {
  binary: string;
  tag: string;
  flags: string[];
}

function tool(cmd: string, args: string[]): boolean {
  return spawnSync(cmd, args, {stdio: "ignore"}).status === 0;
}

/** Refuses to start without the build tools, naming the Debian packages to install. */
function checkTools(): void {
  const missing: string[] = [];
  if (!tool("cmake", ["--version"])) missing.push("cmake");
  if (!tool("c++", ["--version"]) && !tool("g++", ["--version"])) missing.push("g++");
  if (!tool("git", ["--version"])) missing.push("git");
  if (!tool("make", ["--version"]) && !tool("ninja", ["--version"])) missing.push("make");
  if (missing.length > 0) {
    throw new Error(`building llama-server needs ${missing.join(", ")}: install them (Debian: apt-get install ${missing.join(" ")}) and run again`);
  }
}

/** GGML CPU options for the instruction sets this CPU reports; nothing it lacks. */
export function cpuFlags(cpuinfo: string): string[] {
  const has = new Set((/^flags\s*:(.*)$/m.exec(cpuinfo)?.[1] ?? "").trim().split(/\s+/));
  const opt = (name: string, on: boolean) => `-D${name}=${on ? "ON" : "OFF"}`;
  return [
    "-DGGML_NATIVE=OFF",
    opt("GGML_SSE42", has.has("sse4_2")),
    opt("GGML_AVX", has.has("avx")),
    opt("GGML_AVX2", has.has("avx2")),
    opt("GGML_FMA", has.has("fma")),
    opt("GGML_F16C", has.has("f16c")),
    opt("GGML_BMI2", has.has("bmi2")),
    opt("GGML_AVX_VNNI", has.has("avx_vnni")),
    opt("GGML_AVX512", has.has("avx512f") && has.has("avx512bw") && has.has("avx512dq") && has.has("avx512vl")),
    opt("GGML_AVX512_VBMI", has.has("avx512vbmi")),
    opt("GGML_AVX512_VNNI", has.has("avx512_vnni")),
    opt("GGML_AVX512_BF16", has.has("avx512_bf16")),
  ];
}

function run(cmd: string, args: string[], cwd: string, log: string): void {
  const r = spawnSync(cmd, args, {cwd, encoding: "utf8", maxBuffer: 256 * 1024 * 1024});
  writeFileSync(log, `$ ${cmd} ${args.join(" ")}\n${r.stdout ?? ""}\n${r.stderr ?? ""}`, {flag: "a"});
  if (r.status !== 0) throw new Error(`${cmd} ${args.slice(0, 3).join(" ")} … failed (exit ${r.status}); see ${log}`);
}

export function ensureLlamaServer(opts: {cacheDir?: string; log?: (line: string) => void} = {}): LlamaServerBuild {
  const say = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const tag = (JSON.parse(readFileSync(join(LLAMA_DIR, "llama.cpp.info.json"), "utf8")) as {tag: string}).tag;
  const flags = cpuFlags(readFileSync("/proc/cpuinfo", "utf8"));
  const base = join(opts.cacheDir ?? join(homedir(), ".cache", "svc"), "llama-server", tag);
  const done = join(base, "build-complete.json");
  const binary = join(base, "bin", "llama-server");
  if (existsSync(done) && existsSync(binary)) {
    const recorded = JSON.parse(readFileSync(done, "utf8")) as {flags: string[]};
    if (JSON.stringify(recorded.flags) === JSON.stringify(flags)) return {binary, tag, flags};
    say("llama-server was built with other CPU flags; rebuilding");
  }
  checkTools();
  const staging = `${base}.staging`;
  rmSync(staging, {recursive: true, force: true});
  rmSync(base, {recursive: true, force: true});
  mkdirSync(staging, {recursive: true});
  const log = join(staging, "build.log");
  say(`building llama-server ${tag} from node-llama-cpp's bundled source into ${base} (once; several minutes on 2 cores; log: ${log})`);
  const src = join(staging, "src");
  run("git", ["clone", "--quiet", join(LLAMA_DIR, "gitRelease.bundle"), src], staging, log);
  const build = join(staging, "build");
  run("cmake", ["-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF", "-DGGML_OPENMP=ON", ...flags], staging, log);
  run("cmake", ["--build", build, "--target", "llama-server", "-j", String(cpus().length)], staging, log);
  mkdirSync(join(staging, "bin"), {recursive: true});
  renameSync(join(build, "bin", "llama-server"), join(staging, "bin", "llama-server"));
  // Only the binary and the log stay; the marker is written last, then the folder is moved into place.
  rmSync(build, {recursive: true, force: true});
  rmSync(src, {recursive: true, force: true});
  writeFileSync(join(staging, "build-complete.json"), JSON.stringify({tag, flags, builtAt: new Date().toISOString()}, null, 1));
  renameSync(staging, base);
  say(`llama-server ready: ${binary}`);
  return {binary, tag, flags};
}
