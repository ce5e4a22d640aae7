"""The Dockerfile, docker-compose.yml and .dockerignore, kept honest without
a container engine (none runs on the machines this suite runs on): every
`MNEMO_*` variable they set is one the binary reads (its `--help`) and the
deployment guide (docs/guide/deployment.md) documents; every flag they pass exists on that subcommand; paths,
ports and service names agree across the files; and the image's
environment and command, with its paths mapped to temporary ones, start a
real `mnemo serve` whose health check (the Dockerfile's own URL) passes."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Tuple
from urllib.parse import urlparse

import httpx
import pytest
import yaml

from conftest import REPO, env, free_port

DOCKERFILE = (REPO / "Dockerfile").read_text()
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())
IGNORE = [
    line.strip()
    for line in (REPO / ".dockerignore").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]
#: the deployment guide, where the container files are documented
README = (REPO / "docs" / "guide" / "deployment.md").read_text()


def help_of(*command: str) -> str:
    """`mnemo COMMAND --help`, with no MNEMO_* set (clap would print values)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    out = subprocess.run(
        [env("MNEMO_BIN"), *command, "--help"], capture_output=True, text=True, env=clean, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def instructions() -> List[Tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def stages() -> List[List[Tuple[str, str]]]:
    out: List[List[Tuple[str, str]]] = []
    for ins in instructions():
        if ins[0] == "FROM":
            out.append([])
        if out:
            out[-1].append(ins)
    return out


def image_env() -> Dict[str, str]:
    """The runtime stage's ENV."""
    found: Dict[str, str] = {}
    for word, rest in stages()[-1]:
        if word == "ENV":
            for pair in shlex.split(rest):
                k, _, v = pair.partition("=")
                found[k] = v
    return found


def one(word: str, stage: int = -1) -> str:
    values = [rest for w, rest in stages()[stage] if w == word]
    assert len(values) == 1, f"{word}: {values}"
    return values[0]


def mnemo_commands() -> List[List[str]]:
    """Every `mnemo …` invocation in RUN lines (as target/release/mnemo or mnemo)."""
    out = []
    for word, rest in instructions():
        if word == "RUN":
            for part in re.split(r"&&|;", rest):
                args = shlex.split(part)
                if args and (args[0] == "mnemo" or args[0].endswith("/mnemo")):
                    out.append(args[1:])
    return out


GLOBAL_HELP_COMMANDS = [(), ("serve",), ("setup",), ("keys", "create"), ("migrate",), ("mcp",)]


@pytest.fixture(scope="module")
def helps() -> Dict[Tuple[str, ...], str]:
    return {cmd: help_of(*cmd) for cmd in GLOBAL_HELP_COMMANDS}


def env_vars_in_help(helps) -> set:
    return {v for text in helps.values() for v in re.findall(r"\[env: (MNEMO_[A-Z0-9_]+)", text)}


def compose_nodes() -> Dict[str, dict]:
    return {k: v for k, v in COMPOSE["services"].items() if k.startswith("mnemo")}


def test_every_variable_is_read_by_the_binary_and_documented(helps):
    known = env_vars_in_help(helps)
    named = set(image_env())
    for node in compose_nodes().values():
        named |= set(node["environment"])
    named = {n for n in named if n.startswith("MNEMO_")}
    assert named, "the files set MNEMO_* variables"
    assert named <= known, f"not read by mnemo: {sorted(named - known)}"
    undocumented = [n for n in named if n not in README]
    assert not undocumented, f"not in docs/guide/deployment.md: {undocumented}"


def test_every_flag_passed_exists(helps):
    commands = mnemo_commands()
    assert commands, "the Dockerfile runs mnemo setup"
    subcommands = {"setup", "serve", "keys"}
    for args in commands:
        sub = next(a for a in args if a in subcommands)
        before, after = args[: args.index(sub)], args[args.index(sub) + 1 :]
        for flag in [a for a in before if a.startswith("--")]:
            assert re.search(rf"\s{re.escape(flag)}\b", helps[()]), f"global {flag}"
        for flag in [a for a in after if a.startswith("--") and not a.startswith("${")]:
            assert re.search(rf"\s{re.escape(flag)}\b", helps[(sub,)]), f"{sub} {flag}"
    assert json.loads(one("CMD")) == ["serve"] and json.loads(one("ENTRYPOINT")) == ["mnemo"]
    assert "--all-models" in helps[("setup",)], "the Dockerfile's comment names it"
    for flag in ("--tenant", "--role"):
        assert flag in helps[("keys", "create")], "the key command in the comments"


def test_paths_agree_across_stages():
    e = image_env()
    build, runtime = stages()[0], stages()[-1]
    assert len(stages()) >= 2, "multi-stage"
    copies = [rest.split() for w, rest in runtime if w == "COPY"]
    from_build = {dst: src for *opts, src, dst in copies if "--from=build" in opts}
    assert from_build[e["MNEMO_ASSETS_DIR"]] == e["MNEMO_ASSETS_DIR"], "assets copied where read"
    workdir = one("WORKDIR", 0)
    assert from_build["/usr/local/bin/mnemo"] == f"{workdir}/target/release/mnemo"
    assert any("cargo build --release" in r and "--bin mnemo" in r for w, r in build if w == "RUN")
    for args in mnemo_commands():
        assert args[args.index("--assets-dir") + 1] == e["MNEMO_ASSETS_DIR"]
    local = {dst: src for *opts, src, dst in copies if not any(o.startswith("--from") for o in opts)}
    assert local[e["MNEMO_POLICY"]] == "memory_policies.toml"
    assert e["MNEMO_DATA_DIR"] in one("VOLUME"), "the data directory is the volume"
    assert f"chown mnemo:mnemo {e['MNEMO_DATA_DIR']}" in DOCKERFILE
    assert one("WORKDIR").startswith("/var/lib/mnemo") and e["MNEMO_DATA_DIR"].startswith("/var/lib/mnemo")


def test_build_context_holds_what_the_dockerfile_copies():
    sources = []
    for word, rest in instructions():
        if word == "COPY" and "--from" not in rest:
            sources += rest.split()[:-1]
    assert sources
    for src in sources:
        assert (REPO / src).exists(), src
        top = src.split("/")[0]
        assert top not in IGNORE, f"{src} is excluded by .dockerignore"
    for heavy in ("target", "data", "assets", ".git"):
        assert heavy in IGNORE


def test_toolchain_user_port_and_health_check(openapi):
    channel = re.search(r'channel = "([^"]+)"', (REPO / "rust-toolchain.toml").read_text()).group(1)
    assert f"ARG RUST_VERSION={channel}" in DOCKERFILE
    assert one("FROM", 0).startswith("rust:${RUST_VERSION}")
    user = one("USER")
    assert user.split(":")[0] not in ("root", "0")
    port = one("EXPOSE")
    listen = image_env()["MNEMO_LISTEN"]
    assert listen == f"0.0.0.0:{port}"
    health = one("HEALTHCHECK")
    url = urlparse(re.search(r"http://\S+", health).group(0))
    assert url.port == int(port) and url.path == "/readyz" and url.path in openapi["paths"]
    assert "curl" in DOCKERFILE.split("FROM debian")[1], "the runtime image installs curl"


def test_compose_wires_nodes_to_postgres_and_qdrant(helps):
    services = COMPOSE["services"]
    pg = services["postgres"]["environment"]
    nodes = compose_nodes()
    assert len(nodes) >= 2, "a cluster"
    ids = set()
    data_dir = image_env()["MNEMO_DATA_DIR"]
    for name, node in nodes.items():
        assert node["build"] == "." and node["depends_on"]["postgres"]["condition"] == "service_healthy"
        e = node["environment"]
        db = urlparse(e["MNEMO_DATABASE_URL"])
        assert db.scheme == "postgres" and db.hostname == "postgres" and db.port == 5432
        assert db.username == pg["POSTGRES_USER"] and db.path == f"/{pg['POSTGRES_DB']}"
        assert db.password == pg["POSTGRES_PASSWORD"], "the same password, from one variable"
        q = urlparse(e["MNEMO_QDRANT_URL"])
        assert q.hostname in services and q.port == 6334, "Qdrant's gRPC port"
        assert "http://qdrant:6334" in README and "mnemo_memories" in README
        assert e["MNEMO_QDRANT_COLLECTION"] in helps[("serve",)], "the default collection"
        ids.add(e["MNEMO_NODE_ID"])
        (mapping,) = node["ports"]
        assert mapping.split(":")[-1] == one("EXPOSE")
        (volume,) = node["volumes"]
        assert volume.split(":")[1] == data_dir and volume.split(":")[0] in COMPOSE["volumes"]
    assert len(ids) == len(nodes), "every node has its own id"
    assert len({v["volumes"][0].split(":")[0] for v in nodes.values()}) == len(nodes)
    assert "docker-compose.yml" in README and "Dockerfile" in README


def test_the_image_environment_and_command_serve_and_pass_the_health_check(tmp_path):
    """The runtime stage's ENV with its paths moved under a temporary
    directory (assets: the test assets), its CMD, and its HEALTHCHECK URL."""
    e = image_env()
    port = free_port()
    mapped = {
        **e,
        "MNEMO_ASSETS_DIR": env("MNEMO_ASSETS_DIR"),
        "MNEMO_DATA_DIR": str(tmp_path / e["MNEMO_DATA_DIR"].lstrip("/")),
        "MNEMO_POLICY": str(REPO / "memory_policies.toml"),
        "MNEMO_LISTEN": f"127.0.0.1:{port}",
    }
    assert set(mapped) == set(e)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    cmd = [env("MNEMO_BIN"), *json.loads(one("CMD"))]
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env={**clean, **mapped}, stdout=out, stderr=subprocess.STDOUT)
    health = re.search(r"http://\S+", one("HEALTHCHECK")).group(0).replace(
        f"127.0.0.1:{one('EXPOSE')}", f"127.0.0.1:{port}"
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(health, timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.25)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    lines = [l for l in log.read_text().splitlines() if l.strip()]
    assert lines and all(l.startswith("{") for l in lines), "MNEMO_LOG_FORMAT=json took effect"
    assert Path(mapped["MNEMO_DATA_DIR"], "mnemo.db").exists(), "the store is in MNEMO_DATA_DIR"
