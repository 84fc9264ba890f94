// {{name}}: a chatd tool plugin in JavaScript. The module's exports are the world's: `describe`
// lists its tools, `invoke` runs one and returns its output, or throws a plugin error
// ({tag, val}) that fails this call alone. chatd's imports are modules named after the WIT
// (`import { send } from "chatd:plugin/http@0.1.4"`).

export function describe() {
  return [
    {
      name: "{{name}}",
      description: "Counts the words of a text.",
      parametersSchemaJson: JSON.stringify({
        type: "object",
        properties: { text: { type: "string" } },
        required: ["text"],
      }),
    },
  ];
}

export function invoke(name, argumentsJson) {
  if (name !== "{{name}}") throw { tag: "unsupported", val: `no tool named ${name}` };
  const { text } = JSON.parse(argumentsJson);
  if (typeof text !== "string") throw { tag: "invalid-input", val: "text: must be a string" };
  const words = text.split(/\s+/).filter((w) => w !== "").length;
  return { content: `${words} words`, summary: undefined };
}
