"""Runs the built plugin in chatd's sandbox, as the server would: `sh build.sh && python3 -m
unittest`. CHATD names the chatd binary (default: chatd on PATH)."""

import os
import subprocess
import unittest

CHATD = os.environ.get("CHATD", "chatd")


def call(arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHATD, "plugins", "call", "{{name}}.wasm", "--tool", "{{name}}",
                           "--args", arguments], capture_output=True, text=True, check=False)


class PluginTest(unittest.TestCase):
    def test_counts_words(self):
        out = call('{"text": "one two three"}')
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.splitlines()[:2], ["ok: {{name}}", "3 words"])

    def test_refuses_arguments_without_text(self):
        out = call('{"words": 1}')
        self.assertEqual(out.returncode, 1, out.stdout)
        self.assertIn("InvalidInput", out.stdout)


if __name__ == "__main__":
    unittest.main()
