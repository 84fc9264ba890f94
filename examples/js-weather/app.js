// A chatd tool plugin in JavaScript that calls an HTTP API with the operator's key:
// `current_weather` asks the service `weather` (`GET {base_url}/current?city=…`).
//
// The plugin never holds the key. The operator declares the service in chatd's configuration
// file (`[services.weather]`: base URL, key, and this plugin's id), the manifest asks for it,
// and chatd adds the key to requests to that origin only. The plugin reads the base URL as the
// setting `weather_base_url`. See docs/writing-a-plugin.md.

import { get } from "chatd:plugin/config@0.1.4";
import { fetch } from "chatd:plugin/http@0.1.4";
import { write } from "chatd:plugin/log@0.1.4";

const SCHEMA = {
  type: "object",
  properties: { city: { type: "string", description: "A city name, e.g. Lisbon" } },
  required: ["city"],
  additionalProperties: false,
};
const MAX_BODY = 64 * 1024;

// An import's error arrives as a thrown ComponentError whose `payload` is the WIT variant.
function transport(error) {
  const reason = error?.payload?.tag ?? String(error);
  const detail = error?.payload?.val;
  return {
    tag: "transport",
    val: `the weather service was not reached (${detail ? `${reason}: ${detail}` : reason})`,
  };
}

// GETs `url` and parses its JSON; the host reads the body whole (`fetch`; its limit is a u64,
// a BigInt in JavaScript).
function getJson(url) {
  let response;
  try {
    response = fetch(
      {
        method: "get",
        url,
        headers: [{ name: "accept", value: "application/json" }],
        body: undefined,
        timeoutMs: 10000,
        followRedirects: undefined,
      },
      BigInt(MAX_BODY),
    );
  } catch (error) {
    throw transport(error);
  }
  const text = new TextDecoder().decode(response.body);
  if (response.status !== 200)
    throw { tag: "upstream", val: { status: response.status, message: text.slice(0, 200) } };
  try {
    return JSON.parse(text);
  } catch {
    throw { tag: "malformed-response", val: "the answer is not JSON" };
  }
}

export function describe() {
  return [
    {
      name: "js_current_weather",
      description: "The weather now in a city: temperature and conditions.",
      parametersSchemaJson: JSON.stringify(SCHEMA),
    },
  ];
}

export function invoke(name, argumentsJson) {
  if (name !== "js_current_weather") throw { tag: "unsupported", val: `no tool named ${name}` };
  let city;
  try {
    city = JSON.parse(argumentsJson).city?.trim();
  } catch {
    city = undefined;
  }
  if (typeof city !== "string" || city === "")
    throw { tag: "invalid-input", val: 'arguments must be {"city": "a name"}' };
  const base = get("weather_base_url");
  if (base === undefined) throw { tag: "denied", val: "the service weather is not configured" };
  write("info", `asking for the weather in ${city}`);
  const data = getJson(`${base.replace(/\/+$/, "")}/current?city=${encodeURIComponent(city)}`);
  if (typeof data?.city !== "string" || !Number.isFinite(Number(data.temperatureC)) ||
      typeof data.conditions !== "string")
    throw { tag: "malformed-response", val: "the answer lacks city, temperatureC or conditions" };
  return {
    content: `${data.city}: ${Number(data.temperatureC)} °C, ${data.conditions}`,
    summary: `weather in ${city}`,
  };
}
