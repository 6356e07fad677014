# syntax=docker/dockerfile:1
# One image for every gpualert service: `docker run IMAGE agent|engine|notifier|intake|…`.
#   docker build -t gpualert .
# The build stage compiles and packs the package exactly as `npm pack` would for a registry; the
# runtime stage installs that tarball with production dependencies only, so what runs in the
# container is what a user installing the package gets: no tsx, no dev dependencies, no sources.

# The base by tag, which can move under the same name: a release pins it by digest. Where a
# registry can be reached, look the digest up (the index's, so every architecture stays covered):
#   docker buildx imagetools inspect node:24-trixie-slim        # its "Digest: sha256:…"
#   skopeo inspect --format '{{.Digest}}' docker://node:24-trixie-slim
# and build with it:
#   docker build --build-arg NODE_IMAGE=node:24-trixie-slim@sha256:<that digest> -t gpualert .
# No digest is written here because none could be looked up and checked from where this file is
# tested (no registry is reachable). The reproducible image is `npm run build:image`
# (deploy/docker/Containerfile, built FROM its base by digest without a Docker engine).
ARG NODE_IMAGE=node:24-trixie-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
# Every workspace's package.json is needed before `npm ci`, so the whole context is copied;
# .dockerignore keeps node_modules, caches and logs out of it.
COPY . .
RUN --mount=type=cache,target=/root/.npm \
    npm ci --no-audit --no-fund \
    && mkdir /pack \
    && npm pack --pack-destination /pack

FROM ${NODE_IMAGE} AS runtime
LABEL org.opencontainers.image.title="gpualert" \
      org.opencontainers.image.description="Event-driven alerting for GPU fleets" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV NODE_ENV=production
# glibc's malloc arenas at 2, not one a thread: freed memory goes back (tools/service-env.ts). Each
# service's NODE_OPTIONS are in its manifest.
ENV MALLOC_ARENA_MAX=2
# The tarball is bind-mounted from the build stage, so it never becomes a layer of its own.
RUN --mount=type=bind,from=build,source=/pack,target=/pack \
    npm install --global --omit=dev --no-audit --no-fund /pack/gpualert-*.tgz \
    && npm cache clean --force \
    && groupadd --system --gid 10001 gpualert \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin gpualert
COPY deploy/docker/healthcheck.mjs /usr/local/lib/gpualert/healthcheck.mjs
# Numeric, so Kubernetes can check runAsNonRoot without a runAsUser. The agent alone is run as
# root where it reads /dev/kmsg (see deploy/kubernetes/agent-daemonset.yaml).
USER 10001:10001
# intake, agent, notifier (API, console and /metrics), engine (/metrics and /healthz)
EXPOSE 9468 9469 9095 9470
# GPUALERT_HEALTH_URL names the service's /healthz (set per service in docker-compose.yml); left
# unset, the check passes while the process lives.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["node", "/usr/local/lib/gpualert/healthcheck.mjs"]
ENTRYPOINT ["gpualert"]
CMD ["--help"]
