"""Drives mnemo's /v1/chat/completions proxy with the official OpenAI Python
library (run by the ignored Rust test `llm::the_python_openai_sdk_through_the_proxy`).

usage: openai_sdk.py BASE_URL MNEMO_KEY  -> prints {"content": ..., "streamed": ...}
"""

import json
import sys

from openai import OpenAI

base_url, key = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=30)
messages = [
    {"role": "system", "content": "You are a concise barista."},
    {"role": "user", "content": "Which tea should I order?"},
]
reply = client.chat.completions.create(model="gpt-4o-mini", user="ann", messages=messages)
streamed = ""
for chunk in client.chat.completions.create(
    model="gpt-4o-mini", user="ann", messages=messages, stream=True
):
    if chunk.choices and chunk.choices[0].delta.content:
        streamed += chunk.choices[0].delta.content
print(json.dumps({"content": reply.choices[0].message.content, "streamed": streamed}))
