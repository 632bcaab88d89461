# One image per service: `docker build --build-arg SERVICE=notification .` (default entitlement).
# BUN_IMAGE is the builder (default oven/bun:1.4.4); without access to Docker Hub, scripts/images/standins.sh makes a
# local stand-in and standins.env names it. No `# syntax` line: the engine's built-in frontend builds this offline.
# The final stage is FROM scratch: the compiled executable plus exactly the runtime files it needs, assembled into one
# folder by tools/image-root.ts (the libraries `ldd` lists, the CA bundle) and copied in one step. Each image exposes
# its own port only: the last stage is `service-${SERVICE}`, the runtime stage plus that service's EXPOSE.
ARG BUN_IMAGE=oven/bun:1.4.4
ARG SERVICE=entitlement

FROM ${BUN_IMAGE} AS builder
WORKDIR /src
COPY package.json bun.lock bunfig.toml ./
# patchedDependencies (package.json) are applied at install time.
COPY patches ./patches
RUN bun install --frozen-lockfile
COPY tsconfig.json ./
COPY tools ./tools
COPY db ./db
COPY src ./src
ARG SERVICE
# No .git in the build context: `--build-arg BUILD_COMMIT=$(git rev-parse --short=12 HEAD)` names the commit that
# `--version`, /healthz and build_info report ("unknown" without it).
ARG BUILD_COMMIT
RUN bun run build --only "${SERVICE}" --target bun-linux-x64 \
 && bun run tools/image-root.ts "dist/${SERVICE}" /rootfs

FROM scratch AS runtime
COPY --from=builder /rootfs/ /
USER 65532:65532
ENV HOST=0.0.0.0 NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
# No shell or curl in the image: the executable probes its own /readyz.
HEALTHCHECK --interval=5s --timeout=4s --start-period=5s --retries=12 CMD ["/app/service", "healthcheck"]
ENTRYPOINT ["/app/service"]
CMD ["serve"]

# The default PORT of each service.
FROM runtime AS service-entitlement
EXPOSE 8080

FROM runtime AS service-notification
EXPOSE 8081

FROM service-${SERVICE}
