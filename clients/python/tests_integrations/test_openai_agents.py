"""MnemoSession and memory_tools driven through the OpenAI Agents SDK's own
API (Runner.run with session=..., function tools) against a real
`mnemo serve`. The agent's model is a local stub speaking the Chat
Completions API by rule: "call <tool> <json>" makes it call that tool, a
tool result makes it answer "tool said: <result>"; everything else is real."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, List

import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.memory import Session
from openai import AsyncOpenAI

import mnemo
from conftest import support, unique
from mnemo.integrations.openai_agents import MnemoSession, SessionUserMismatch, memory_tools

set_tracing_disabled(True)


class AgentModel(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: List[Dict[str, Any]] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: AgentModel

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        self.server.requests.append(body)
        last = body["messages"][-1]
        message: Dict[str, Any] = {"role": "assistant", "content": "ok"}
        finish = "stop"
        if last["role"] == "tool":
            message["content"] = f"tool said: {last['content']}"
        elif last["role"] == "user" and str(last["content"]).startswith("call "):
            _, name, args = str(last["content"]).split(" ", 2)
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{len(self.server.requests)}",
                        "type": "function",
                        "function": {"name": name, "arguments": args},
                    }
                ],
            }
            finish = "tool_calls"
        elif last["role"] == "user":
            message["content"] = f"you said: {last['content']}"
        support.send_completion(self, message, model="stub", finish=finish)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def agent_model() -> Iterator[AgentModel]:
    model = AgentModel()
    threading.Thread(target=model.serve_forever, daemon=True).start()
    yield model
    model.shutdown()
    model.server_close()


def make_agent(agent_model: AgentModel, tools: Any = ()) -> Agent:
    openai = AsyncOpenAI(base_url=agent_model.base_url, api_key="stub", max_retries=0)
    return Agent(
        name="assistant",
        instructions="Be brief.",
        model=OpenAIChatCompletionsModel(model="stub", openai_client=openai),
        tools=list(tools),
    )


def aclient(server: Any) -> mnemo.AsyncClient:
    return mnemo.AsyncClient(server.base_url, api_key=server.agent, timeout=30)


def test_session_protocol_round_trips_items(server: Any):
    async def go() -> None:
        async with aclient(server) as c:
            user = unique("ana")
            session = await MnemoSession.create(client=c, user_id=user)
            assert isinstance(session, Session)
            assert await session.get_items() == []
            call = {
                "type": "function_call",
                "call_id": "c1",
                "name": "lookup",
                "arguments": '{"q": "tea"}',
            }
            items: List[Any] = [
                {"role": "user", "content": "I like green tea"},
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "Noted.", "annotations": []}],
                },
                call,
                {"type": "function_call_output", "call_id": "c1", "output": "found 3"},
                {"role": "system", "content": "Be brief."},
            ]
            await session.add_items(items)
            got = await session.get_items()
            assert got == [
                {"role": "user", "content": "I like green tea"},
                {"role": "assistant", "content": "Noted."},
                call,
                {"type": "function_call_output", "call_id": "c1", "output": "found 3"},
                {"role": "system", "content": "Be brief."},
            ]
            assert await session.get_items(limit=2) == got[-2:]
            # Mnemo's thread holds the text messages as such (its working memory).
            view = await c.thread(session.session_id).get()
            assert [(m.role, m.content) for m in view.messages[:2]] == [
                ("user", "I like green tea"),
                ("assistant", "Noted."),
            ]
            assert await session.pop_item() == {"role": "system", "content": "Be brief."}
            assert len(await session.get_items()) == 4
            await session.clear_session()
            assert await session.get_items() == []
            assert await session.pop_item() is None
            await session.add_items([{"role": "user", "content": "Fresh start"}])
            assert await session.get_items() == [{"role": "user", "content": "Fresh start"}]

    asyncio.run(go())


def test_runner_keeps_the_conversation_in_a_mnemo_thread(server: Any, agent_model: AgentModel):
    async def go() -> None:
        async with aclient(server) as c:
            session = await MnemoSession.create(client=c, user_id=unique("ben"))
            agent = make_agent(agent_model)
            first = await Runner.run(agent, "My name is Ben", session=session)
            assert first.final_output == "you said: My name is Ben"
            second = await Runner.run(agent, "What is my name?", session=session)
            assert second.final_output == "you said: What is my name?"
            sent = agent_model.requests[-1]["messages"]
            contents = [m.get("content") for m in sent]
            assert "My name is Ben" in contents and "you said: My name is Ben" in contents, (
                "the second run's model call carried the first run's turn, read from Mnemo"
            )
            items = await session.get_items()
            assert [i["content"] for i in items] == [
                "My name is Ben",
                "you said: My name is Ben",
                "What is my name?",
                "you said: What is my name?",
            ]

    asyncio.run(go())


def test_tools_remember_recall_forget_and_users_apart(server: Any, agent_model: AgentModel):
    async def go() -> None:
        async with aclient(server) as c:
            alice, bob = unique("alice"), unique("bob")
            session = await MnemoSession.create(client=c, user_id=alice)
            agent = make_agent(agent_model, memory_tools(c, user_id=alice))
            said = await Runner.run(
                agent, 'call remember {"text": "Alice prefers green tea"}', session=session
            )
            assert str(said.final_output).startswith("tool said: remembered (id ")
            memory_id = str(said.final_output).split("(id ")[1].rstrip(")")
            found = await Runner.run(
                agent, 'call recall {"query": "what does alice drink?"}', session=session
            )
            assert f"[{memory_id}] Alice prefers green tea" in str(found.final_output)
            # The function calls and their outputs are in the session, verbatim.
            kinds = [i.get("type") for i in await session.get_items()]
            assert kinds.count("function_call") == 2 and kinds.count("function_call_output") == 2

            bobs_agent = make_agent(agent_model, memory_tools(c, user_id=bob))
            theirs = await Runner.run(bobs_agent, 'call recall {"query": "green tea"}')
            assert "nothing remembered" in str(theirs.final_output)
            not_his = await Runner.run(bobs_agent, f'call forget {{"memory_id": "{memory_id}"}}')
            assert "no such memory" in str(not_his.final_output)
            assert (await c.get(memory_id)).status == "active"

            gone = await Runner.run(
                agent, f'call forget {{"memory_id": "{memory_id}"}}', session=session
            )
            assert "forgotten" in str(gone.final_output)
            again = await Runner.run(agent, 'call recall {"query": "green tea"}')
            assert "nothing remembered" in str(again.final_output)

            # The thread is alice's: a session claiming it for bob is refused.
            stolen = MnemoSession(session.session_id, client=c, user_id=bob)
            with pytest.raises(SessionUserMismatch):
                await stolen.get_items()

    asyncio.run(go())


def test_forget_user_erases_the_session(server: Any):
    async def go() -> None:
        async with aclient(server) as c:
            user = unique("cy")
            session = await MnemoSession.create(client=c, user_id=user)
            await session.add_items([{"role": "user", "content": "Cy takes the early train"}])
            await session.forget_user()
            again = MnemoSession(session.session_id, client=c, user_id=user)
            with pytest.raises(mnemo.NotFoundError):
                await again.get_items()

    asyncio.run(go())
