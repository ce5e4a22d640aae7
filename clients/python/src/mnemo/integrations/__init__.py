"""Mnemo behind the agent frameworks' own memory interfaces.

Each module needs its framework, installed with the client's extra:

- :mod:`mnemo.integrations.langgraph` (``pip install "mnemo-client[langgraph]"``):
  :class:`~mnemo.integrations.langgraph.MnemoStore`, a LangGraph ``BaseStore``.
- :mod:`mnemo.integrations.openai_agents` (``[openai-agents]``):
  :class:`~mnemo.integrations.openai_agents.MnemoSession`, the OpenAI Agents
  SDK's ``Session``, and :func:`~mnemo.integrations.openai_agents.memory_tools`.
- :mod:`mnemo.integrations.crewai` (``[crewai]``):
  :class:`~mnemo.integrations.crewai.MnemoStorage`, CrewAI's memory
  ``StorageBackend``.

Every adapter takes the user from an explicit ``user_id`` or from the key or
namespace it is given, never from a guess, and offers ``forget_user`` (Mnemo's
forget-all, followed to its end).
"""
