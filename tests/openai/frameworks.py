"""Agent frameworks built on the official OpenAI Python SDK, as clients of chatd's /openai/v1
with their default settings (tests/api/openai_frameworks.rs).

usage: frameworks.py BASE_URL CASE MODEL, the token in OPENAI_API_KEY. The cases:
  agents_responses   the OpenAI Agents SDK: an Agent with a `@function_tool` (strict, its
                     default) on the Responses API (the SDK's default API)
  agents_chat        the same Agent on chat completions (`OpenAIChatCompletionsModel`)
  pydantic_tool      `openai.pydantic_function_tool` (strict) with `chat.completions.parse`
  lc_bind_tools      LangChain's `ChatOpenAI.bind_tools(..., strict=True)`, the tool run and its
                     result sent back
  lc_structured_function_calling
                     `with_structured_output(..., method="function_calling")`
  lc_structured      `with_structured_output(...)`, its default method (json_schema)
Prints one JSON object: what the framework returned and the tool calls it ran, or the error it
raised (its class and message). Retries are off and tracing is not exported.
"""

import json
import sys

import openai
from pydantic import BaseModel, Field

CALLS = []


def weather(city):
    CALLS.append({"city": city})
    return f"Sunny, 22 C in {city}"


class GetWeather(BaseModel):
    """Get the current weather for a city."""

    city: str


class Forecast(BaseModel):
    """A weather forecast."""

    city: str = Field(description="The city's name")
    temperature_c: float


QUESTION = "What's the weather in Paris?"


def agents(base, model, api):
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)
    client = openai.AsyncOpenAI(base_url=base, max_retries=0)

    @function_tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return weather(city)

    wire = OpenAIResponsesModel if api == "responses" else OpenAIChatCompletionsModel
    agent = Agent(
        name="Weather",
        instructions="You answer weather questions.",
        tools=[get_weather],
        model=wire(model=model, openai_client=client),
    )
    return {"final": Runner.run_sync(agent, QUESTION).final_output}


def pydantic_tool(base, model):
    client = openai.OpenAI(base_url=base, max_retries=0)
    completion = client.chat.completions.parse(
        model=model,
        messages=[{"role": "user", "content": QUESTION}],
        tools=[openai.pydantic_function_tool(GetWeather)],
    )
    call = completion.choices[0].message.tool_calls[0]
    return {"name": call.function.name, "parsed": call.function.parsed_arguments.model_dump()}


def chat_model(base, model):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=base, model=model, max_retries=0)


def lc_bind_tools(base, model):
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return weather(city)

    bound = chat_model(base, model).bind_tools([get_weather], strict=True)
    messages = [HumanMessage(QUESTION)]
    asked = bound.invoke(messages)
    messages.append(asked)
    for call in asked.tool_calls:
        messages.append(ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"]))
    return {"final": bound.invoke(messages).content}


def lc_structured(base, model, method):
    chat = chat_model(base, model)
    structured = (
        chat.with_structured_output(Forecast, method=method)
        if method
        else chat.with_structured_output(Forecast)
    )
    return {"parsed": structured.invoke("The forecast for Paris").model_dump()}


CASES = {
    "agents_responses": lambda base, model: agents(base, model, "responses"),
    "agents_chat": lambda base, model: agents(base, model, "chat"),
    "pydantic_tool": pydantic_tool,
    "lc_bind_tools": lc_bind_tools,
    "lc_structured_function_calling": lambda b, m: lc_structured(b, m, "function_calling"),
    "lc_structured": lambda base, model: lc_structured(base, model, None),
}


def main():
    base, case, model = sys.argv[1:4]
    try:
        out = CASES[case](base, model)
    except Exception as error:  # noqa: BLE001 - the test reads what the client saw
        out = {"raised": type(error).__name__, "message": str(error)}
    out["calls"] = CALLS
    print(json.dumps(out))


if __name__ == "__main__":
    main()
