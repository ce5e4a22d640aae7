"""Typed request and response bodies of the Mnemo REST API.

Each model names the OpenAPI component it mirrors in ``__schema_name__``; the
test suite fetches ``/openapi.json`` from a real ``mnemo serve`` and checks
every model's fields, their required-ness and their types against that
component, so the client and the server cannot drift apart unnoticed.

Requests refuse unknown fields (as the server does); responses ignore fields
they do not know, so an older client keeps working against a newer server.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Dict, List, Literal, Optional, Union
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

Tier = Literal["working", "long_term", "reference"]
Kind = Literal["preference", "fact", "event", "instruction", "document", "message", "summary"]
Status = Literal["active", "pending", "superseded", "expired", "archived", "deleted"]
AuditAction = Literal[
    "create",
    "update",
    "supersede",
    "confirm",
    "reject",
    "reinforce",
    "expire",
    "archive",
    "delete",
    "restore",
    "access",
]
MessageRole = Literal["user", "assistant", "tool"]
ExtractionState = Literal["pending", "running", "done", "skipped"]

#: The OpenAPI component behind each ``Literal`` alias above.
ENUMS: Dict[str, Any] = {
    "Tier": Tier,
    "Kind": Kind,
    "Status": Status,
    "AuditAction": AuditAction,
    "MessageRole": MessageRole,
    "ExtractionState": ExtractionState,
}

Metadata = Dict[str, Any]


class Request(BaseModel):
    """A request body: unknown fields are an error, as on the server."""

    model_config = ConfigDict(extra="forbid")
    __schema_name__: ClassVar[str]

    def to_json(self) -> Dict[str, Any]:
        """The body as sent: only the fields that were set (so an explicit
        ``None`` is sent as ``null``, and an absent field is left out)."""
        return self.model_dump(mode="json", exclude_unset=True)


class Response(BaseModel):
    """A response body: fields a newer server adds are ignored."""

    model_config = ConfigDict(extra="ignore")
    __schema_name__: ClassVar[str]


# ----- memories ------------------------------------------------------------


class MemoryInput(Request):
    """One memory to add."""

    __schema_name__ = "MemoryInput"
    tier: Optional[Tier] = None
    user_id: Optional[str] = None
    thread_id: Optional[str] = None
    text: str
    kind: Optional[Kind] = None
    importance: Optional[float] = None
    confidence: Optional[float] = None
    metadata: Metadata = Field(default_factory=dict)
    expires_at: Optional[datetime] = None


class AddRequest(Request):
    """``memories`` (a batch) or one memory's fields at the top level."""

    __schema_name__ = "AddRequest"
    memories: Optional[List[MemoryInput]] = None
    refresh: bool = False
    tier: Optional[Tier] = None
    user_id: Optional[str] = None
    thread_id: Optional[str] = None
    text: Optional[str] = None
    kind: Optional[Kind] = None
    importance: Optional[float] = None
    confidence: Optional[float] = None
    metadata: Optional[Metadata] = None
    expires_at: Optional[datetime] = None


class AddedMemory(Response):
    __schema_name__ = "AddedMemory"
    id: UUID
    tier: Tier
    status: Status


class AddResponse(Response):
    __schema_name__ = "AddResponse"
    ids: List[UUID]
    memories: List[AddedMemory]


class Source(Response):
    __schema_name__ = "Source"
    thread_id: Optional[str] = None
    message_id: Optional[str] = None
    document_id: Optional[str] = None
    chunk_index: Optional[int] = None


class Memory(Response):
    __schema_name__ = "Memory"
    id: UUID
    tenant_id: str
    tier: Tier
    user_id: Optional[str] = None
    thread_id: Optional[str] = None
    kind: Kind
    text: str
    importance: float
    confidence: float
    status: Status
    created_at: datetime
    updated_at: datetime
    last_accessed_at: Optional[datetime] = None
    access_count: int
    expires_at: Optional[datetime] = None
    source: Source
    metadata: Metadata
    embedding_model: Optional[str] = None
    version: int
    supersedes: Optional[UUID] = None
    superseded_by: Optional[UUID] = None


class PatchRequest(Request):
    """Absent fields are left as they are; ``expires_at=None`` clears the expiry."""

    __schema_name__ = "PatchRequest"
    text: Optional[str] = None
    importance: Optional[float] = None
    metadata: Optional[Metadata] = None
    expires_at: Optional[datetime] = None
    refresh: bool = False


class DeleteResponse(Response):
    __schema_name__ = "DeleteResponse"
    id: UUID
    status: Status


class ListResponse(Response):
    """One page of ``GET /v1/memories``; ``next_cursor`` is set when there may be more."""

    __schema_name__ = "ListResponse"
    memories: List[Memory]
    next_cursor: Optional[str] = None


class AuditEvent(Response):
    __schema_name__ = "AuditEvent"
    memory_id: UUID
    tenant_id: str
    user_id: Optional[str] = None
    action: AuditAction
    actor: str
    at: datetime
    before_text: Optional[str] = None
    after_text: Optional[str] = None
    details: Any


class HistoryResponse(Response):
    __schema_name__ = "HistoryResponse"
    events: List[AuditEvent]


class SupersedeRequest(Request):
    __schema_name__ = "SupersedeRequest"
    text: str


class SupersedeResponse(Response):
    __schema_name__ = "SupersedeResponse"
    memory: Memory
    superseded: UUID


# ----- search and context --------------------------------------------------

KindFilter = Union[Kind, List[Kind]]


class SearchFilters(Request):
    __schema_name__ = "SearchFilters"
    kind: Optional[KindFilter] = None
    metadata: Metadata = Field(default_factory=dict)
    created_after: Optional[datetime] = None
    created_before: Optional[datetime] = None


class SearchBody(Request):
    __schema_name__ = "SearchBody"
    user_id: Optional[str] = None
    thread_id: Optional[str] = None
    query: str
    top_k: Optional[int] = None
    tiers: Optional[List[Tier]] = None
    filters: SearchFilters = Field(default_factory=SearchFilters)
    include_pending: bool = False
    explain: bool = False


class ScoreBreakdown(Response):
    __schema_name__ = "ScoreBreakdown"
    bm25_score: Optional[float] = None
    bm25_rank: Optional[int] = None
    vector_similarity: Optional[float] = None
    vector_rank: Optional[int] = None
    fused_score: float
    decay_factor: float
    importance_factor: float
    final_score: float


class SearchHit(Response):
    __schema_name__ = "SearchHit"
    memory: Memory
    score: float
    breakdown: Optional[ScoreBreakdown] = None


class SearchResponse(Response):
    __schema_name__ = "SearchResponse"
    hits: List[SearchHit]
    took_ms: float
    embed_ms: float


class ChatMessage(Request):
    """A chat message (``role``, ``content``), as prompts carry them."""

    model_config = ConfigDict(extra="ignore")
    __schema_name__ = "ChatMessage"
    role: str
    content: str


class ContextRequest(Request):
    __schema_name__ = "ContextRequest"
    user_id: Optional[str] = None
    thread_id: Optional[str] = None
    query: Optional[str] = None
    messages: Optional[List[ChatMessage]] = None
    model_context_tokens: int
    budget_fraction: Optional[float] = None


class ContextMemory(Response):
    __schema_name__ = "ContextMemory"
    id: UUID
    tier: Tier
    kind: Kind
    created_at: datetime
    score: float
    text: str


class ContextBlock(Response):
    __schema_name__ = "ContextBlock"
    text: str
    tokens: int
    budget_tokens: int
    memory_ids: List[UUID]
    memories: List[ContextMemory]


# ----- threads -------------------------------------------------------------


class CreateThread(Request):
    __schema_name__ = "CreateThread"
    user_id: Optional[str] = None
    goal: Optional[str] = None


class Summary(Response):
    __schema_name__ = "Summary"
    text: str = ""
    open_todos: List[str] = Field(default_factory=list)
    commitments: List[str] = Field(default_factory=list)


class Thread(Response):
    __schema_name__ = "Thread"
    id: UUID
    tenant_id: str
    user_id: str
    goal: Optional[str] = None
    summary: Summary
    summary_upto_seq: int
    created_at: datetime
    updated_at: datetime
    last_activity_at: datetime
    last_compacted_at: Optional[datetime] = None


class ToolSummary(Response):
    __schema_name__ = "ToolSummary"
    name: str
    status: str
    summary: str
    key_fields: Metadata = Field(default_factory=dict)
    payload_id: Optional[UUID] = None


class Message(Response):
    __schema_name__ = "Message"
    seq: int
    thread_id: UUID
    role: MessageRole
    content: str
    tool: Optional[ToolSummary] = None
    created_at: datetime
    extraction_state: ExtractionState
    compacted: bool


class ThreadView(Thread):
    """A thread with its uncompacted messages (the newest 200), oldest first."""

    __schema_name__ = "ThreadView"
    messages: List[Message]
    compacted_messages: int


class ToolResult(Request):
    """A tool's result: the history keeps status, summary and key fields;
    the payload is stored apart (``Thread.payload``)."""

    __schema_name__ = "ToolResult"
    name: str
    status: str
    summary: Optional[str] = None
    key_fields: Metadata = Field(default_factory=dict)
    payload: Optional[Any] = None


class AppendMessage(Request):
    __schema_name__ = "AppendMessage"
    role: MessageRole
    content: str = ""
    tool: Optional[ToolResult] = None


class PromptRequest(Request):
    __schema_name__ = "PromptRequest"
    message: str
    model_context_tokens: int


class TokenBreakdown(Response):
    __schema_name__ = "TokenBreakdown"
    total: int
    system: int
    goal: int
    summary: int
    history: int
    message: int
    memories: int
    budget_memories: int


class PromptResponse(Response):
    __schema_name__ = "PromptResponse"
    messages: List[ChatMessage]
    tokens: TokenBreakdown
    memory_ids: List[UUID]


class TurnRequest(Request):
    __schema_name__ = "TurnRequest"
    message: str
    max_tokens: Optional[int] = None
    temperature: Optional[float] = None


class TurnReply(Response):
    __schema_name__ = "TurnReply"
    user_message: Message
    reply: Message
    tokens: TokenBreakdown
    memory_ids: List[UUID]
    model: str


# ----- reference documents -------------------------------------------------


class DocumentBody(Request):
    __schema_name__ = "DocumentBody"
    document_id: Optional[str] = None
    title: Optional[str] = None
    text: str
    metadata: Metadata = Field(default_factory=dict)
    importance: Optional[float] = None
    created_at: Optional[datetime] = None


class DocumentResponse(Response):
    __schema_name__ = "DocumentResponse"
    document_id: str
    chunk_ids: List[UUID]
    replaced_chunks: int


class DocumentDeleted(Response):
    __schema_name__ = "DocumentDeleted"
    document_id: str
    deleted_chunks: int


# ----- users ---------------------------------------------------------------


class ErasedCounts(Response):
    __schema_name__ = "ErasedCounts"
    memories: int
    candidates: int
    threads: int
    messages: int
    audit_events: int
    lexical_docs: int
    vectors: int
    cached_embeddings: int


class ErasureReceipt(Response):
    """What ``DELETE /v1/users/{user_id}`` removed, store by store."""

    __schema_name__ = "ErasureReceipt"
    user_id: str
    erased: ErasedCounts
    completed_at: datetime


class ErasureVerification(Response):
    __schema_name__ = "ErasureVerification"
    user_id: str
    memories: int
    audit_events: int
    threads: int
    messages: int
    lexical_docs: int
    vectors: int
    pending_erasure: bool
    live_nodes: int
    nodes_behind: List[str]
    erased: bool
    last_erasure_at: Optional[datetime] = None


# ----- operations and errors -----------------------------------------------


class Health(Response):
    __schema_name__ = "Health"
    status: str
    checks: Dict[str, str] = Field(default_factory=dict)


class ErrorDetail(Response):
    __schema_name__ = "ErrorDetail"
    code: str
    message: str
    field: Optional[str] = None


class ErrorBody(Response):
    __schema_name__ = "ErrorBody"
    error: ErrorDetail


def all_models() -> List[type]:
    """Every model of this module (the schema test walks them)."""
    return [
        v
        for v in globals().values()
        if isinstance(v, type)
        and issubclass(v, BaseModel)
        and v not in (Request, Response)
        and "__schema_name__" in vars(v)
    ]
