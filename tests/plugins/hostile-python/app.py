"""A hostile tool plugin in Python for chatd's tests (tests/api/plugin_languages.rs): each tool
tries one way out of the sandbox or one way to exhaust the host. Built with componentize-py
`--stub-wasi`, like every Python plugin: its WASI imports are stubs that trap, so a file, a
socket or the environment fails this call only."""

import json
import os
import socket

import wit_world
from wit_world.imports import types, tool_types

TOOLS = {
    "py_read_file": "Reads /etc/hostname",
    "py_open_socket": "Connects to 127.0.0.1:22",
    "py_environment": "Lists the environment's variable names",
    "py_spin": "Loops forever",
    "py_hog": "Allocates memory without end",
    "py_echo": "Answers its arguments",
}


def read_file():
    with open("/etc/hostname") as f:
        return f.read()


def open_socket():
    with socket.create_connection(("127.0.0.1", 22), timeout=2) as s:
        return s.recv(64).decode("latin-1")


def environment():
    return ",".join(sorted(os.environ)) or "(empty)"


def spin():
    n = 0
    while True:
        n += 1


def hog():
    blocks = []
    while True:
        blocks.append(bytearray(1024 * 1024))


class WitWorld(wit_world.WitWorld):
    def describe(self):
        schema = json.dumps({"type": "object"})
        return [types.ToolSpec(name=n, description=d, parameters_schema_json=schema)
                for n, d in TOOLS.items()]

    def invoke(self, name, arguments_json):
        runs = {"py_read_file": read_file, "py_open_socket": open_socket,
                "py_environment": environment, "py_spin": spin, "py_hog": hog,
                "py_echo": lambda: arguments_json}
        return tool_types.ToolOutput(content=runs[name](), summary=None)
