"""The baselines of the per-step and streaming figures: the smallest agent loop over the same openai SDK and
fake server, with the same trivial tool (`echo ok`, a process like nami's). Prints streamed text as it comes.

    python bench/minimal_loop.py BASE_URL TASK [--no-stream] [--direct [REQUEST.json]] [--inprocess]

By default it calls `chat.completions.create()`, as the seeds' loop did; the SDK then walks every message
and tool against its type declarations and builds an object of every chunk. With --direct it posts the
body as it is and reads the reply as plain JSON, as nami's client does (`client.post`, `cast_to=object`):
the same SDK, retries and SSE decoding, nothing else. That one is the yardstick of nami's own cost. Given
a file (a request nami sent), it sends the same body: nami's system prompt, tools and options.
"""

import json
import subprocess
import sys
from pathlib import Path

import openai

TOOLS = [{"type": "function", "function": {"name": "ping", "description": "Answers ok.",
                                           "parameters": {"type": "object", "properties": {}}}}]
base_url, task = sys.argv[1], sys.argv[2]
stream, direct = "--no-stream" not in sys.argv, "--direct" in sys.argv
inprocess = "--inprocess" in sys.argv  # the tool answers in this process, as a Python tool in nami's does
given = [a for a in sys.argv[3:] if a.endswith(".json")]
template = json.loads(Path(given[0]).read_text()) if given else {
    "model": "fake-model", "messages": [{"role": "system", "content": "You are a minimal agent."}], "tools": TOOLS,
    "stream": stream}
client = openai.OpenAI(base_url=base_url, api_key="bench")
messages = [*(m for m in template["messages"] if m["role"] == "system"), {"role": "user", "content": task}]
field = dict.get if direct else getattr  # plain JSON, or the SDK's objects
while True:
    request = {**template, "messages": messages}
    response = (client.post("/chat/completions", body=request, cast_to=object, stream=stream,
                            stream_cls=openai.Stream[object]) if direct
                else client.chat.completions.create(**request))
    text, calls = "", {}
    for chunk in (response if stream else []):
        choices = field(chunk, "choices")
        delta = field(choices[0], "delta") if choices else None
        if delta and field(delta, "content"):
            text += field(delta, "content")
            print(field(delta, "content"), end="", flush=True)
        for piece in (field(delta, "tool_calls") or []) if delta else []:
            slot = calls.setdefault(field(piece, "index"), {"id": "", "name": "", "arguments": ""})
            function = field(piece, "function")
            slot["id"] += field(piece, "id") or ""
            slot["name"] += field(function, "name") or ""
            slot["arguments"] += field(function, "arguments") or ""
    if not stream:
        message = field(field(response, "choices")[0], "message")
        text = field(message, "content") or ""
        print(text, end="", flush=True)
        calls = {i: {"id": field(c, "id"), "name": field(field(c, "function"), "name"),
                     "arguments": field(field(c, "function"), "arguments")}
                 for i, c in enumerate(field(message, "tool_calls") or [])}
    if not calls:
        print()
        break
    messages.append({"role": "assistant", "content": text, "tool_calls": [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in calls.values()]})
    for c in calls.values():
        json.loads(c["arguments"] or "{}")
        result = "ok" if inprocess else subprocess.run(["echo", "ok"], capture_output=True, text=True).stdout
        messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
