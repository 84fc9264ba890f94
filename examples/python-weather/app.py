"""A chatd tool plugin in Python that calls an HTTP API with the operator's key: `current_weather`
asks the service `weather` (`GET {base_url}/current?city=…`) and reports what it answers.

The plugin never holds the key. The operator declares the service in chatd's configuration file
(`[services.weather]`: base URL, key, and this plugin's id), the manifest asks for it, and chatd
adds the key to requests to that origin only. The plugin reads the base URL as the setting
`weather_base_url`. See docs/writing-a-plugin.md."""

import json
from urllib.parse import quote

import wit_world
from componentize_py_types import Err
from wit_world.imports import config, http, log, types, tool_types

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "A city name, e.g. Lisbon"}},
    "required": ["city"],
    "additionalProperties": False,
}
MAX_BODY = 64 * 1024


def http_error(error) -> Err:
    """The `http` import's error as the tool's: the model sees why the service was not reached."""
    value = getattr(error, "value", None)
    reason = f"{type(error).__name__.removeprefix('HttpError_')}: {value}" if value else \
        type(error).__name__.removeprefix("HttpError_")
    return Err(types.PluginError_Transport(f"the weather service was not reached ({reason})"))


def get_json(url: str):
    """GETs `url` and parses its JSON; the host reads the body whole (`http.fetch`)."""
    request = http.Request(method=http.Method.GET, url=url,
                           headers=[http.Header(name="accept", value="application/json")],
                           body=None, timeout_ms=10_000, follow_redirects=None)
    try:
        response = http.fetch(request, MAX_BODY)
    except Err as e:
        raise http_error(e.value)
    if response.status != 200:
        message = response.body[:200].decode("utf-8", "replace")
        raise Err(types.PluginError_Upstream(types.UpstreamError(status=response.status,
                                                                 message=message)))
    try:
        return json.loads(response.body)
    except ValueError:
        raise Err(types.PluginError_MalformedResponse("the answer is not JSON"))


class WitWorld(wit_world.WitWorld):
    def describe(self):
        return [types.ToolSpec(
            name="current_weather",
            description="The weather now in a city: temperature and conditions.",
            parameters_schema_json=json.dumps(SCHEMA),
        )]

    def invoke(self, name, arguments_json):
        if name != "current_weather":
            raise Err(types.PluginError_Unsupported(f"no tool named {name}"))
        try:
            city = json.loads(arguments_json)["city"].strip()
        except (ValueError, KeyError, TypeError, AttributeError):
            city = ""
        if not city:
            raise Err(types.PluginError_InvalidInput("arguments must be {\"city\": \"a name\"}"))
        base = config.get("weather_base_url")
        if base is None:
            raise Err(types.PluginError_Denied("the service weather is not configured"))
        log.write(log.Level.INFO, f"asking for the weather in {city}")
        data = get_json(f"{base.rstrip('/')}/current?city={quote(city)}")
        try:
            text = f"{data['city']}: {float(data['temperatureC']):g} °C, {data['conditions']}"
        except (KeyError, TypeError, ValueError):
            raise Err(types.PluginError_MalformedResponse("the answer lacks city, "
                                                          "temperatureC or conditions"))
        return tool_types.ToolOutput(content=text, summary=f"weather in {city}")
