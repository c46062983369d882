"""The baseline of the per-step and streaming figures: the smallest agent loop over the same openai SDK and
fake server, with the same trivial tool (`echo ok`, a process like nami's). Prints streamed text as it comes.

    python bench/minimal_loop.py BASE_URL TASK [--no-stream]
"""

import json
import subprocess
import sys

import openai

TOOLS = [{"type": "function", "function": {"name": "ping", "description": "Answers ok.",
                                           "parameters": {"type": "object", "properties": {}}}}]
base_url, task, stream = sys.argv[1], sys.argv[2], "--no-stream" not in sys.argv
client = openai.OpenAI(base_url=base_url, api_key="bench")
messages = [{"role": "system", "content": "You are a minimal agent."}, {"role": "user", "content": task}]
while True:
    response = client.chat.completions.create(model="fake-model", messages=messages, tools=TOOLS, stream=stream)
    text, calls = "", {}
    for chunk in (response if stream else []):
        delta = chunk.choices[0].delta if chunk.choices else None
        if delta and delta.content:
            text += delta.content
            print(delta.content, end="", flush=True)
        for piece in (delta.tool_calls or []) if delta else []:
            slot = calls.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
            slot["id"] += piece.id or ""
            slot["name"] += piece.function.name or ""
            slot["arguments"] += piece.function.arguments or ""
    if not stream:
        message = response.choices[0].message
        text = message.content or ""
        print(text, end="", flush=True)
        calls = {i: {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                 for i, c in enumerate(message.tool_calls or [])}
    if not calls:
        print()
        break
    messages.append({"role": "assistant", "content": text, "tool_calls": [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in calls.values()]})
    for c in calls.values():
        json.loads(c["arguments"] or "{}")
        result = subprocess.run(["echo", "ok"], capture_output=True, text=True).stdout
        messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
