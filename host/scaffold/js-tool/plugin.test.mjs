// Runs the built plugin in chatd's sandbox, as the server would: `sh build.sh && node --test`.
// CHATD names the chatd binary (default: chatd on PATH).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";

const chatd = process.env.CHATD ?? "chatd";
const call = (args) =>
  spawnSync(chatd, ["plugins", "call", "{{name}}.wasm", "--tool", "{{name}}", "--args", args], {
    encoding: "utf8",
  });

test("counts words", () => {
  const out = call('{"text": "one two three"}');
  assert.equal(out.status, 0, out.stderr);
  assert.deepEqual(out.stdout.split("\n").slice(0, 2), ["ok: {{name}}", "3 words"]);
});

test("refuses arguments without text", () => {
  const out = call('{"words": 1}');
  assert.equal(out.status, 1, out.stdout);
  assert.match(out.stdout, /InvalidInput/);
});
