// node-llama-cpp lists a prebuilt binary package per platform as an optional dependency. Some of them
// (riscv64, macOS, Windows) are not published at the pinned version in the registry this project installs
// from, so `npm install` leaves them out of package-lock.json, and `npm ci` then refuses the lock file
// ("Missing: @node-llama-cpp/... from lock file"). This script adds an entry for each missing one, with
// its os/cpu, marked optional: npm ci accepts the lock and skips them on any other platform.
// Run it after `npm install` changes the lock: `node scripts/complete-lock.mjs`.
import {readFileSync, writeFileSync} from "node:fs";

const LOCK = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(LOCK, "utf8"));
const nlc = lock.packages["node_modules/node-llama-cpp"];
if (!nlc) throw new Error("node-llama-cpp is not in package-lock.json");

export function platformOf(name) {
  const [os, arch] = name.replace("@node-llama-cpp/", "").split("-");
  return {os: [{linux: "linux", mac: "darwin", win: "win32"}[os]], cpu: [arch]};
}

let added = 0;
for (const [name, version] of Object.entries(nlc.optionalDependencies ?? {})) {
  const key = `node_modules/${name}`;
  if (lock.packages[key]) continue;
  lock.packages[key] = {version, ...platformOf(name), license: "MIT", optional: true, engines: {node: ">=20.0.0"}};
  added++;
}
const [root, ...rest] = Object.entries(lock.packages);
lock.packages = Object.fromEntries([root, ...rest.sort(([a], [b]) => a.localeCompare(b))]);
writeFileSync(LOCK, JSON.stringify(lock, null, 2) + "\n");
console.log(`package-lock.json: ${added} node-llama-cpp platform entr${added === 1 ? "y" : "ies"} added`);
