"""{{name}}: a chatd tool plugin in Python. `describe` lists its tools, `invoke` runs one; a
failure is raised as `Err(PluginError_…)` and fails this call alone. The bindings (`wit_world`)
are generated from wit/ by componentize-py when it builds."""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports import tool_types, types

SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}


class WitWorld(wit_world.WitWorld):
    def describe(self):
        return [types.ToolSpec(name="{{name}}", description="Counts the words of a text.",
                               parameters_schema_json=json.dumps(SCHEMA))]

    def invoke(self, name, arguments_json):
        if name != "{{name}}":
            raise Err(types.PluginError_Unsupported(f"no tool named {name}"))
        text = json.loads(arguments_json).get("text")
        if not isinstance(text, str):
            raise Err(types.PluginError_InvalidInput("text: must be a string"))
        return tool_types.ToolOutput(content=f"{len(text.split())} words", summary=None)
