"""The official OpenAI Python SDK against chatd's /openai/v1 (tests/api/openai.rs).

usage: sdk.py BASE_URL COMMAND [ARG...], the token in OPENAI_API_KEY (commands: models,
retrieve ID, chat and stream MODEL MESSAGES_JSON [EXTRA_BODY_JSON], respond and respond_stream
MODEL INPUT_JSON [EXTRA_BODY_JSON], respond_helper MODEL INPUT_JSON, file FILE_ID,
file_content FILE_ID). Prints one JSON object:
what the call returned, or the error the SDK raised (its class, status, type, code, param), so
the test reads chatd's answers as the SDK's users do. The SDK's own retries are off.
"""

import json
import sys

import openai


def run(client, command, args):
    if command == "models":
        return {"ids": [model.id for model in client.models.list()]}
    if command == "retrieve":
        model = client.models.retrieve(args[0])
        return {"id": model.id, "object": model.object, "owned_by": model.owned_by}
    if command == "chat":
        # chat MODEL MESSAGES_JSON [EXTRA_BODY_JSON]: a non-streaming chat completion.
        extra = json.loads(args[2]) if len(args) > 2 else None
        completion = client.chat.completions.create(
            model=args[0], messages=json.loads(args[1]), extra_body=extra
        )
        choice = completion.choices[0]
        return {
            "id": completion.id,
            "object": completion.object,
            "model": completion.model,
            "content": choice.message.content,
            "finish_reason": choice.finish_reason,
            "usage": completion.usage.model_dump() if completion.usage else None,
            # Everything the server sent, extra fields included.
            "raw": completion.model_dump(),
        }
    if command == "stream":
        # stream MODEL MESSAGES_JSON [EXTRA_BODY_JSON]: a streamed chat completion, each chunk
        # as the SDK parsed it; an error the stream carried after its head is what it raised.
        extra = json.loads(args[2]) if len(args) > 2 else None
        stream = client.chat.completions.create(
            model=args[0], messages=json.loads(args[1]), stream=True, extra_body=extra
        )
        chunks = []
        try:
            for chunk in stream:
                chunks.append(chunk.model_dump())
        except openai.APIError as error:
            return {
                "chunks": chunks,
                "raised": type(error).__name__,
                "type": error.type,
                "code": error.code,
                "message": error.message,
            }
        return {"chunks": chunks}
    if command == "respond":
        # respond MODEL INPUT_JSON [EXTRA_BODY_JSON]: a response, not streamed.
        extra = json.loads(args[2]) if len(args) > 2 else None
        response = client.responses.create(
            model=args[0], input=json.loads(args[1]), extra_body=extra
        )
        return {"output_text": response.output_text, "raw": response.model_dump()}
    if command == "respond_stream":
        # respond_stream MODEL INPUT_JSON [EXTRA_BODY_JSON]: a streamed response, each event as
        # the SDK parsed it (its class and fields).
        extra = json.loads(args[2]) if len(args) > 2 else None
        stream = client.responses.create(
            model=args[0], input=json.loads(args[1]), stream=True, extra_body=extra
        )
        return {
            "events": [
                {"class": type(event).__name__, **event.model_dump()} for event in stream
            ]
        }
    if command == "respond_helper":
        # respond_helper MODEL INPUT_JSON: the SDK's own stream helper, which rebuilds the
        # response from the events and so checks their order and ids.
        with client.responses.stream(model=args[0], input=json.loads(args[1])) as stream:
            for _ in stream:
                pass
            final = stream.get_final_response()
        return {"output_text": final.output_text, "status": final.status}
    if command == "file":
        # file FILE_ID: OpenAI's File object, as `files.retrieve` reads it.
        return client.files.retrieve(args[0]).model_dump()
    if command == "file_content":
        # file_content FILE_ID: the file's bytes, as `files.content` reads them, as text.
        return {"text": client.files.content(args[0]).read().decode()}
    raise SystemExit(f"unknown command {command}")


def main():
    base_url, command, *args = sys.argv[1:]
    client = openai.OpenAI(base_url=base_url, max_retries=0, timeout=60)
    try:
        out = run(client, command, args)
    except openai.APIStatusError as error:
        out = {
            "raised": type(error).__name__,
            "status": error.status_code,
            "type": error.type,
            "code": error.code,
            "param": error.param,
            "message": error.message,
        }
    print(json.dumps(out))


main()
