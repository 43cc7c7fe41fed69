// package.json's engines.node says which Node versions are tested: the line the full suite runs on (the machine's,
// first), then one `^<version>` per version the nodes tier pins (scripts/node-versions.mjs), which runs the unit and
// integration tiers under each. A pin changed without engines, or engines without a pin, fails here.

import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {test} from "node:test";

test("engines.node is the full suite's Node line and then exactly the nodes tier's pins", async () => {
  const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8"));
  // A plain .mjs script (it runs before tsx is loaded), imported through a URL so the compiler does not look for its types.
  const pinsUrl = new URL("../../../scripts/node-versions.mjs", import.meta.url).href;
  const {NODE_PINS} = (await import(pinsUrl)) as {NODE_PINS: {version: string; integrity: string}[]};
  const ranges = (pkg.engines.node as string).split("||").map((r) => r.trim());
  assert.match(ranges[0]!, /^\^20\.\d+\.\d+$/);
  assert.deepEqual(ranges.slice(1), NODE_PINS.map((p) => `^${p.version}`));
  for (const p of NODE_PINS) assert.match(p.integrity, /^sha512-[A-Za-z0-9+/]{86}==$/, p.version);
});
