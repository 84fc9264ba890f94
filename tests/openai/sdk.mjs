// The official OpenAI JavaScript SDK against chatd's /openai/v1 (tests/api/openai_js.rs), as
// tests/openai/sdk.py is the Python one's.
//
// usage: node sdk.mjs BASE_URL COMMAND [ARG...], the token in OPENAI_API_KEY and the package's
// folder in OPENAI_JS_MODULE (target/openai-node/node_modules/openai). Commands: models; chat
// and stream MODEL MESSAGES_JSON [EXTRA_BODY_JSON]; respond_stream MODEL INPUT_JSON
// [EXTRA_BODY_JSON]. Prints one JSON object: what the call returned, or the error the SDK
// threw (its class, status, type, code, param). The SDK's own retries are off.

import { pathToFileURL } from "node:url";
import { join } from "node:path";

const { default: OpenAI } = await import(
  pathToFileURL(join(process.env.OPENAI_JS_MODULE, "index.mjs")).href
);

const [baseURL, command, ...args] = process.argv.slice(2);
const client = new OpenAI({ baseURL, maxRetries: 0, timeout: 60_000 });
const extra = (i) => (args[i] ? JSON.parse(args[i]) : {});

async function run() {
  if (command === "models") {
    const ids = [];
    for await (const model of client.models.list()) ids.push(model.id);
    return { ids };
  }
  if (command === "chat") {
    const completion = await client.chat.completions.create({
      model: args[0],
      messages: JSON.parse(args[1]),
      ...extra(2),
    });
    return { raw: completion };
  }
  if (command === "stream") {
    const stream = await client.chat.completions.create({
      model: args[0],
      messages: JSON.parse(args[1]),
      stream: true,
      ...extra(2),
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    return { chunks };
  }
  if (command === "stream_helper") {
    // The SDK's own runner, which joins the chunks (tool calls by their index) into a message.
    const runner = client.chat.completions.stream({
      model: args[0],
      messages: JSON.parse(args[1]),
      ...extra(2),
    });
    const completion = await runner.finalChatCompletion();
    return { raw: completion };
  }
  if (command === "respond_stream") {
    const stream = client.responses.stream({
      model: args[0],
      input: JSON.parse(args[1]),
      ...extra(2),
    });
    const types = [];
    for await (const event of stream) types.push(event.type);
    const final = await stream.finalResponse();
    return { types, output_text: final.output_text, raw: final };
  }
  throw new Error(`unknown command ${command}`);
}

try {
  console.log(JSON.stringify(await run()));
} catch (error) {
  if (!(error instanceof OpenAI.APIError)) throw error;
  console.log(
    JSON.stringify({
      raised: error.constructor.name,
      status: error.status ?? null,
      type: error.type ?? null,
      code: error.code ?? null,
      param: error.param ?? null,
      message: error.message,
    }),
  );
}
