# chatd's image: built from this source tree, run as a non-root user with its data on /data.
#
#   podman build -t chatd .                      (docker build works the same)
#   podman run -p 8787:8787 -v chatd-data:/data -e ADMIN_TOKEN=… -e CHATD_SECRET_KEY=… \
#     -e PROVIDER_A_API_KEY=… chatd        (without ADMIN_TOKEN it refuses to serve on 0.0.0.0)
#
# The data (the SQLite database, compiled plugins, the devbox's pinned host key) is in the
# volume; on PostgreSQL only the compile cache and the host key are. The health check asks
# /ready: the database answers and, on PostgreSQL, this instance holds its lease. compose.yaml
# runs it on SQLite, or twice on PostgreSQL behind a proxy. docs/deploying.md has the rest.
#
# Both base images are arguments, so a machine without a registry can build from bases made
# out of Debian's archive (docs/deploying.md, "Building without a registry").
ARG BUILD_IMAGE=docker.io/library/rust:1.95.0-slim-bookworm
ARG RUNTIME_IMAGE=docker.io/library/debian:bookworm-slim

FROM ${BUILD_IMAGE} AS build
# The bundled plugins are built for wasm32-wasip2 by bundled/build.rs; the Python interpreter with
# componentize-py and its packages from PyPI, in a venv (bundled/build_python.rs).
RUN rustup target add wasm32-wasip2 \
 && apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p chatd && install -m 0755 target/release/chatd /chatd

FROM ${RUNTIME_IMAGE}
# ca-certificates: upstream TLS (providers, search, MCP servers); openssh-client: the devbox
# tools drive the system ssh; curl: the health check. Nothing else.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates openssh-client curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --user-group --no-create-home --home-dir /data --shell /usr/sbin/nologin chatd \
 && mkdir -p /data && chown chatd:chatd /data
COPY --from=build /chatd /usr/local/bin/chatd
USER chatd
WORKDIR /data
# On every interface, so open mode (no ADMIN_TOKEN) refuses to start here: give it a token
# (or CHATD_OPEN_ON_NETWORK=true, docs/deploying.md says why not).
# The machine's compile cache is the volume's own (the home is /data): one folder, not two. Mount
# a cache shared by several containers there instead, with CHATD_SECRET_KEY (docs/deploying.md).
ENV HOST=0.0.0.0 \
    PORT=8787 \
    DATABASE_URL=sqlite:///data/chatd.db \
    CHATD_DATA_DIR=/data \
    CHATD_CACHE_DIR=/data/plugin-cache
VOLUME /data
EXPOSE 8787
# Loopback, and /ready needs no token.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD curl -fsS "http://127.0.0.1:${PORT}/ready" || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["chatd"]
