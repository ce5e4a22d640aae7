"""The client's models against the server's own `/openapi.json`: field names,
required-ness, types (enums by value, nested models by component name,
nullability), and every route the client calls, with its request and
response components. A field added, renamed or retyped on the server fails
here until the client follows."""

from __future__ import annotations

import typing
from datetime import datetime
from typing import Any, Dict, FrozenSet
from uuid import UUID

import pytest
from pydantic import BaseModel

from mnemo import _core, models

REF = "#/components/schemas/"
#: Routes the client leaves to other tools: the OpenAI-compatible proxy (use
#: the OpenAI SDK, docs/guide/models-and-proxy.md) and running evaluations and reading one
#: run (`mnemo eval`; the client lists past reports, `GET /v1/evals`).
NOT_IN_CLIENT = {("POST", "/v1/chat/completions"), ("POST", "/v1/evals"), ("GET", "/v1/evals/{id}")}


def components(doc: Dict[str, Any]) -> Dict[str, Any]:
    return doc["components"]["schemas"]


def flatten(schema: Dict[str, Any], comps: Dict[str, Any]):
    """(properties, required) of an object schema, `allOf` (serde flatten) merged."""
    if "$ref" in schema:
        return flatten(comps[schema["$ref"][len(REF) :]], comps)
    props: Dict[str, Any] = dict(schema.get("properties", {}))
    required = set(schema.get("required", []))
    for part in schema.get("allOf", []):
        p, r = flatten(part, comps)
        props.update(p)
        required |= r
    return props, required


def schema_types(s: Dict[str, Any], comps: Dict[str, Any]) -> FrozenSet:
    if not s:
        return frozenset({"any"})
    if "$ref" in s:
        name = s["$ref"][len(REF) :]
        target = comps[name]
        if "enum" in target:
            return frozenset({("enum", frozenset(target["enum"]))})
        if "oneOf" in target or "anyOf" in target:
            return schema_types(target, comps)
        return frozenset({("ref", name)})
    out = set()
    for key in ("oneOf", "anyOf"):
        for part in s.get(key, []):
            out |= schema_types(part, comps)
    if "allOf" in s and len(s["allOf"]) == 1:
        out |= schema_types(s["allOf"][0], comps)
    if "enum" in s:
        values = [v for v in s["enum"] if v is not None]
        out.add(("enum", frozenset(values)))
        if None in s["enum"]:
            out.add("null")
        return frozenset(out)
    kinds = s.get("type")
    for t in [kinds] if isinstance(kinds, str) else kinds or []:
        if t == "string":
            out.add({"uuid": "uuid", "date-time": "datetime"}.get(s.get("format"), "string"))
        elif t == "array":
            out.add(("array", schema_types(s.get("items", {}), comps)))
        else:
            out.add(t)
    return frozenset(out)


SCALARS = {str: "string", UUID: "uuid", datetime: "datetime", int: "integer", float: "number", bool: "boolean"}


def annotation_types(ann: Any) -> FrozenSet:
    origin = typing.get_origin(ann)
    if ann is Any:
        return frozenset({"any"})
    if ann is type(None):
        return frozenset({"null"})
    if origin is typing.Union:
        out = set()
        for a in typing.get_args(ann):
            out |= annotation_types(a)
        return frozenset(out)
    if origin is typing.Literal:
        return frozenset({("enum", frozenset(typing.get_args(ann)))})
    if origin in (list, typing.List):
        return frozenset({("array", annotation_types(typing.get_args(ann)[0]))})
    if origin in (dict, typing.Dict):
        return frozenset({"object"})
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return frozenset({("ref", ann.__schema_name__)})
    return frozenset({SCALARS[ann]})


def compatible(py: FrozenSet, schema: FrozenSet) -> bool:
    if "any" in py:
        return True
    if "any" in schema:
        # serde_json::Value fields are documented as `object`.
        return py - {"null"} <= {"object"}
    py_arrays = {t for t in py if isinstance(t, tuple) and t[0] == "array"}
    sc_arrays = {t for t in schema if isinstance(t, tuple) and t[0] == "array"}
    if len(py_arrays) != len(sc_arrays):
        return False
    for (_, a), (_, b) in zip(sorted(py_arrays, key=str), sorted(sc_arrays, key=str)):
        if not compatible(a, b):
            return False
    return (py - py_arrays - {"null"}) == (schema - sc_arrays - {"null"})


MODELS = sorted(models.all_models(), key=lambda m: m.__schema_name__)


def test_every_model_has_a_component(openapi):
    comps = components(openapi)
    missing = [m.__schema_name__ for m in MODELS if m.__schema_name__ not in comps]
    assert not missing, f"no such component on the server: {missing}"
    assert len(MODELS) >= 40


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__schema_name__)
def test_model_matches_its_component(openapi, model):
    comps = components(openapi)
    props, required = flatten(comps[model.__schema_name__], comps)
    fields = model.model_fields
    assert set(fields) == set(props), (
        f"{model.__schema_name__}: client-only {sorted(set(fields) - set(props))}, "
        f"server-only {sorted(set(props) - set(fields))}"
    )
    hints = typing.get_type_hints(model)
    for name, info in fields.items():
        assert info.is_required() == (name in required), (
            f"{model.__schema_name__}.{name}: required on the server: {name in required}"
        )
        py = annotation_types(hints[name])
        sc = schema_types(props[name], comps)
        assert compatible(py, sc), f"{model.__schema_name__}.{name}: client {py} vs server {sc}"
        if "null" in sc:
            assert "null" in py or "any" in py, f"{model.__schema_name__}.{name} may be null"


def test_enums_match(openapi):
    comps = components(openapi)
    for name, alias in models.ENUMS.items():
        assert set(comps[name]["enum"]) == set(typing.get_args(alias)), name


def _ref(content_holder: Dict[str, Any]) -> str:
    schema = content_holder["content"]["application/json"]["schema"]
    return schema["$ref"][len(REF) :]


def test_routes_and_their_bodies(openapi):
    paths = openapi["paths"]
    for method, path, request, response in _core.ROUTES:
        assert path in paths, path
        op = paths[path].get(method.lower())
        assert op is not None, f"{method} {path}"
        if request is None:
            assert "requestBody" not in op, f"{method} {path} takes a body"
        elif isinstance(request, str):
            # A body that is not JSON (an export): its content type.
            assert request in op["requestBody"]["content"], f"{method} {path}"
        else:
            assert _ref(op["requestBody"]) == request.__schema_name__, f"{method} {path}"
        if response is not None:
            answers = response if isinstance(response, tuple) else (response,)
            ok = [r for status, r in sorted(op["responses"].items()) if status.startswith("2")]
            assert [_ref(r) for r in ok] == [a.__schema_name__ for a in answers], f"{method} {path}"


def test_the_client_covers_every_route(openapi):
    served = {
        (method.upper(), path)
        for path, ops in openapi["paths"].items()
        for method in ops
        if method in ("get", "post", "patch", "put", "delete")
    }
    called = {(method, path) for method, path, _, _ in _core.ROUTES}
    assert served - NOT_IN_CLIENT == called


def test_list_parameters(openapi):
    params = openapi["paths"]["/v1/memories"]["get"]["parameters"]
    assert {p["name"] for p in params if p["in"] == "query"} == set(_core.LIST_PARAMS)


def test_query_parameters_of_the_paged_routes(openapi):
    def query(path: str):
        return {p["name"] for p in openapi["paths"][path]["get"]["parameters"] if p["in"] == "query"}

    assert query("/v1/threads/{id}") == set(_core.THREAD_PAGE_PARAMS)
    assert query("/v1/users") == set(_core.USERS_PARAMS)
