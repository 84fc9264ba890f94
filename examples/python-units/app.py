"""A chatd tool plugin in Python: `convert_units` converts a quantity between units of length,
mass, volume or temperature. Built with componentize-py against chatd's WIT (world `tool`);
see docs/writing-a-plugin.md.

The class below implements the world's two exports: `describe` lists the tools, `invoke` runs
one. A tool's failure is raised as `Err(PluginError_InvalidInput(...))`: the model sees the
message as the tool's error and the call fails alone."""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports import types, tool_types

# Each unit's size in its kind's base unit (metre, kilogram, litre). Temperature is apart: its
# scales have different zeros.
FACTORS = {
    "length": {"mm": 0.001, "cm": 0.01, "m": 1.0, "km": 1000.0, "in": 0.0254, "ft": 0.3048,
               "yd": 0.9144, "mi": 1609.344},
    "mass": {"mg": 1e-6, "g": 0.001, "kg": 1.0, "t": 1000.0, "oz": 0.028349523125,
             "lb": 0.45359237},
    "volume": {"ml": 0.001, "l": 1.0, "tsp": 0.00492892159375, "tbsp": 0.01478676478125,
               "cup": 0.2365882365, "pt": 0.473176473, "gal": 3.785411784},
}
TEMPERATURES = ("c", "f", "k")

SCHEMA = {
    "type": "object",
    "properties": {
        "value": {"type": "number", "description": "The quantity to convert"},
        "from": {"type": "string", "description": "Its unit, e.g. km, lb, cup, f"},
        "to": {"type": "string", "description": "The unit wanted"},
    },
    "required": ["value", "from", "to"],
    "additionalProperties": False,
}


def invalid(message: str) -> Err:
    return Err(types.PluginError_InvalidInput(message))


def to_kelvin(value: float, unit: str) -> float:
    return {"c": value + 273.15, "f": (value - 32) * 5 / 9 + 273.15, "k": value}[unit]


def from_kelvin(value: float, unit: str) -> float:
    return {"c": value - 273.15, "f": (value - 273.15) * 9 / 5 + 32, "k": value}[unit]


def convert(value: float, source: str, target: str) -> float:
    if source in TEMPERATURES and target in TEMPERATURES:
        return from_kelvin(to_kelvin(value, source), target)
    for kind, units in FACTORS.items():
        if source in units and target in units:
            return value * units[source] / units[target]
    known = sorted(set(TEMPERATURES).union(*FACTORS.values()))
    raise invalid(f"cannot convert {source} to {target}: units are {', '.join(known)} "
                  "and both must measure the same thing")


class WitWorld(wit_world.WitWorld):
    def describe(self):
        return [types.ToolSpec(
            name="convert_units",
            description="Converts a quantity between units of length, mass, volume or "
                        "temperature.",
            parameters_schema_json=json.dumps(SCHEMA),
        )]

    def invoke(self, name, arguments_json):
        if name != "convert_units":
            raise Err(types.PluginError_Unsupported(f"no tool named {name}"))
        try:
            args = json.loads(arguments_json)
            value = float(args["value"])
            source, target = args["from"].strip().lower(), args["to"].strip().lower()
        except (ValueError, KeyError, TypeError, AttributeError):
            raise invalid("arguments must be {\"value\": number, \"from\": unit, \"to\": unit}")
        result = convert(value, source, target)
        text = f"{value:g} {source} = {result:.6g} {target}"
        return tool_types.ToolOutput(content=text, summary=text)
