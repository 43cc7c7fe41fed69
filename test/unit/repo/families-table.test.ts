// The README's model-family table is generated from the family files (src/templates/families/table.ts).
import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {test} from "node:test";
import {familiesTableMarkdown} from "../../../src/templates/families/table.ts";

test("README.md contains the generated model-family table verbatim", () => {
  const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
  assert.ok(readme.includes(familiesTableMarkdown()), "regenerate the table in README.md from familiesTableMarkdown()");
});
