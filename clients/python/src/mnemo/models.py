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
    "import",
]
MessageRole = Literal["user", "assistant", "tool"]
ExtractionState = Literal["pending", "running", "done", "skipped"]
ErasureStatus = Literal["in_progress", "erased", "not_erased"]
StoreFiles = Literal["store", "lexical", "vectors", "other"]

#: The OpenAPI component behind each ``Literal`` alias above.
ENUMS: Dict[str, Any] = {
    "Tier": Tier,
    "Kind": Kind,
    "Status": Status,
    "AuditAction": AuditAction,
    "MessageRole": MessageRole,
    "ExtractionState": ExtractionState,
    "ErasureStatus": ErasureStatus,
    "StoreFiles": StoreFiles,
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


#: What a write did with one item (the memory lifecycle).
AddOutcome = Literal["created", "reinforced", "promoted", "superseded"]


class AddedMemory(Response):
    __schema_name__ = "AddedMemory"
    #: The memory that holds the item: the new one, or the stored memory it
    #: reinforced or promoted.
    id: UUID
    tier: Tier
    status: Status
    outcome: AddOutcome
    #: With ``superseded``: the memory the item replaced.
    superseded: Optional[UUID] = None


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


class RerankSignals(Response):
    """What the second stage saw in a hit (``[retrieval.rerank]``)."""

    __schema_name__ = "RerankSignals"
    #: Share (idf-weighted) of the query's adjacent term pairs the memory
    #: holds adjacent, 0..1.
    phrase: float
    #: A newer memory of the same owner matches the same query terms.
    older_duplicate: bool
    #: The multiplier the stage applied to the score.
    factor: float


class TurnContext(Response):
    """Why a turn holds its score through conversation context
    (``[retrieval.conversation]``): the hit beside it lent it a share."""

    __schema_name__ = "TurnContext"
    #: The hit this turn is beside in its conversation.
    beside: UUID
    #: The score lent: the policy's weight times that hit's score.
    lent_score: float


class TemporalSignal(Response):
    """The time a query named and whether the hit was created then
    (``[retrieval.temporal]``)."""

    __schema_name__ = "TemporalSignal"
    #: The words of the query that named a time ("last week", "in May 2023").
    phrase: str
    #: The window of creation times favoured: the named period's start, and
    #: its end plus the telling lag (exclusive).
    start: datetime
    until: datetime
    #: Whether this memory was created in the window.
    in_window: bool
    #: The multiplier applied to the score.
    factor: float


class LearnedSignals(Response):
    """What the learned ranking stage saw in a hit (``[retrieval.learned]``)."""

    __schema_name__ = "LearnedSignals"
    #: Each feature's value, by name.
    features: Dict[str, float]
    #: weight × value, by name (features that add nothing are left out).
    contributions: Dict[str, float]
    #: The model's bias (log-odds before any feature).
    bias: float
    #: The hit's probability of relevance.
    relevance: float


class ScoreBreakdown(Response):
    __schema_name__ = "ScoreBreakdown"
    bm25_score: Optional[float] = None
    bm25_rank: Optional[int] = None
    vector_similarity: Optional[float] = None
    vector_rank: Optional[int] = None
    #: What each leg added to ``fused_score`` (normalised within the query's
    #: candidates and weighted; they sum to ``fused_score``).
    bm25_contribution: Optional[float] = None
    vector_contribution: Optional[float] = None
    fused_score: float
    #: ``absolute`` fusion: the BM25 score of a full match of the query (the
    #: lexical leg's unit), the confidence in the vector leg, and the
    #: query's background cosine in its scope (the candidate floor's zero;
    #: absent when the scope holds fewer memories than the leg asked for).
    bm25_full_match_score: Optional[float] = None
    vector_confidence: Optional[float] = None
    vector_background: Optional[float] = None
    #: How much ``vector_similarity`` was raised because the memory is in
    #: another script than the query (absent when 0).
    vector_script_shift: Optional[float] = None
    decay_factor: float
    importance_factor: float
    #: The second stage's signals (absent when it did not see the hit).
    rerank: Optional[RerankSignals] = None
    #: Present when a neighbouring turn's loan set the score.
    context: Optional[TurnContext] = None
    #: Present when the query named a time.
    temporal: Optional[TemporalSignal] = None
    #: The learned stage's features, contributions and probability of
    #: relevance (absent when the stage is off).
    learned: Optional[LearnedSignals] = None
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
    """A thread with one page of its history, oldest first: by default the
    newest 200 uncompacted messages; ``next_before`` is set when there are
    older ones (pass it as ``before``)."""

    __schema_name__ = "ThreadView"
    messages: List[Message]
    compacted_messages: int
    next_before: Optional[int] = None


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
    #: API keys bound to the user, deleted with them.
    api_keys: int = 0


class ErasureReceipt(Response):
    """What ``DELETE /v1/users/{user_id}`` removed, store by store."""

    __schema_name__ = "ErasureReceipt"
    user_id: str
    erased: ErasedCounts
    completed_at: datetime


class ImportReport(Response):
    """What ``POST /v1/users/{user_id}/import`` restored."""

    __schema_name__ = "ImportReport"
    user_id: str
    counts: Dict[str, int]
    rows_written: int
    indexed: int
    model_changed: bool
    replaced: Optional[ErasureReceipt] = None


class ErasureAccepted(Response):
    """The 202 of ``DELETE /v1/users/{user_id}``: the erasure is recorded and
    runs to the end whatever the client does; ``status_url`` (a path) follows it."""

    __schema_name__ = "ErasureAccepted"
    user_id: str
    status: ErasureStatus
    status_url: str


class ErasureVerification(Response):
    """What every store still holds of a user; ``status`` is ``in_progress``
    while an erasure runs, ``erased`` once nothing is left anywhere."""

    __schema_name__ = "ErasureVerification"
    user_id: str
    status: ErasureStatus
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
    #: API key rows still bound to the user (0 once erased).
    api_keys: int = 0
    #: With ``files=True`` (admin key, embedded deployment): the byte scan
    #: of the data directory.
    files: Optional["ResidueReport"] = None


class StoreResidue(Response):
    __schema_name__ = "StoreResidue"
    store: StoreFiles
    files_scanned: int
    bytes_scanned: int
    files_with_residue: int


class ResidueHit(Response):
    __schema_name__ = "ResidueHit"
    path: str
    store: StoreFiles
    found: List[str]


class ResidueReport(Response):
    """What the data directory's files hold of a user (labels, never bytes)."""

    __schema_name__ = "ResidueReport"
    searched_for: List[str]
    stores: List[StoreResidue]
    hits: List[ResidueHit]
    clean: bool


ErasureVerification.model_rebuild()


class UserEntry(Response):
    __schema_name__ = "UserEntry"
    user_id: str
    #: Memories of this user in the part of the store the call read.
    memories_seen: int
    has_key: bool


class UsersResponse(Response):
    """One call of ``GET /v1/users``: it reads at most 5,000 memories;
    ``next_cursor`` is set when there are more to read."""

    __schema_name__ = "UsersResponse"
    users: List[UserEntry]
    next_cursor: Optional[str] = None
    scanned: int


# ----- inspection and administration -----------------------------------------


class WhoAmI(Response):
    __schema_name__ = "WhoAmI"
    key_id: str
    tenant_id: str
    #: ``admin``, ``agent`` or ``user``.
    role: str
    user_id: Optional[str] = None
    insecure_dev: bool


class LineageResponse(Response):
    """Every version of a fact the key may read, oldest first."""

    __schema_name__ = "LineageResponse"
    memories: List[Memory]


class PolicyResponse(Response):
    """The policy in force, as JSON and as policy-file TOML."""

    __schema_name__ = "PolicyResponse"
    policy: Dict[str, Any]
    toml: str


class EvalRunSummary(Response):
    __schema_name__ = "EvalRunSummary"
    set: str
    preset: str
    queries: int
    metrics: Dict[str, Any]


class EvalReportSummary(Response):
    __schema_name__ = "EvalReportSummary"
    id: UUID
    finished_at: Optional[datetime] = None
    runs: List[EvalRunSummary]
    comparisons: Dict[str, Any]


class EvalsResponse(Response):
    """Past evaluation reports, newest first, and the sets one can run."""

    __schema_name__ = "EvalsResponse"
    reports: List[EvalReportSummary]
    sets: List[str]


class KeyView(Response):
    """A stored API key (never its secret)."""

    __schema_name__ = "KeyView"
    id: str
    tenant_id: str
    user_id: Optional[str] = None
    role: str
    created_at: datetime
    revoked_at: Optional[datetime] = None


class KeysResponse(Response):
    __schema_name__ = "KeysResponse"
    keys: List[KeyView]


class CreateKey(Request):
    """``role`` is ``admin``, ``agent`` or ``user`` (``user`` needs ``user_id``)."""

    __schema_name__ = "CreateKey"
    role: Literal["admin", "agent", "user"]
    user_id: Optional[str] = None


class CreatedKey(Response):
    """A new key; ``secret`` is shown this once (the server keeps its hash)."""

    __schema_name__ = "CreatedKey"
    key: KeyView
    secret: str


class JobView(Response):
    __schema_name__ = "JobView"
    job: str
    interval_secs: int
    running: bool
    lease_expires_at: Optional[datetime] = None
    last_completed_at: Optional[datetime] = None
    first_due_at: Optional[datetime] = None
    last_stats: Optional[Dict[str, Any]] = None


class JobsResponse(Response):
    __schema_name__ = "JobsResponse"
    jobs: List[JobView]


class PreviewChange(Response):
    __schema_name__ = "PreviewChange"
    id: UUID
    action: str
    detail: str


class DryRunResponse(Response):
    """What a lifecycle job would do now; nothing was written."""

    __schema_name__ = "DryRunResponse"
    job: str
    scanned: int
    counts: Dict[str, int]
    elapsed_ms: int
    changes: List[PreviewChange]


class IndexHealth(Response):
    """Index sizes and lag against the store (process-wide)."""

    __schema_name__ = "IndexHealth"
    embedding_model: str
    store_indexed: int
    lexical_docs: int
    vector_points: int
    lexical_lag: int
    vector_lag: int
    embedding_queue_depth: int
    change_feed_head: int
    memories: Dict[str, Dict[str, int]]


# ----- operations and errors -----------------------------------------------


class IndexLag(Response):
    """How far the server's index repair loop is behind its store (`/readyz`)."""

    __schema_name__ = "IndexLag"
    repairing: bool
    changes: int
    seconds: float
    last_failure: Optional[str] = None
    last_failure_at: Optional[datetime] = None


class UpkeepStatus(Response):
    """The store's upkeep in this server process (`/readyz` details)."""

    __schema_name__ = "UpkeepStatus"
    checkpoints: int
    checkpoints_incomplete: int
    last_checkpoint_complete: Optional[bool] = None
    purge_vacuum_fallbacks: int


class ReadyDetails(Response):
    """What `/readyz` reports as degraded without making the node unready."""

    __schema_name__ = "ReadyDetails"
    store: UpkeepStatus


class Health(Response):
    __schema_name__ = "Health"
    status: str
    checks: Dict[str, str] = Field(default_factory=dict)
    index_lag: Optional[IndexLag] = None
    details: Optional[ReadyDetails] = None


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
