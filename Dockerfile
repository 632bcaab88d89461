# syntax=docker/dockerfile:1
# One image per service: `docker build --build-arg SERVICE=notification .` (default entitlement).
# The final stage is FROM scratch: the compiled executable plus exactly the runtime files it needs. A compiled Bun
# binary is dynamically linked against glibc, so the libraries `ldd dist/<service>` lists are copied one by one (the
# scratch-root test checks this list against ldd and runs the binary in a root holding only these files).
ARG SERVICE=entitlement

FROM oven/bun:1.4.4 AS builder
WORKDIR /src
COPY package.json bun.lock bunfig.toml ./
# patchedDependencies (package.json) are applied at install time.
COPY patches ./patches
RUN bun install --frozen-lockfile
COPY tsconfig.json ./
COPY scripts ./scripts
COPY db ./db
COPY src ./src
ARG SERVICE
# No .git in the build context: `--build-arg BUILD_COMMIT=$(git rev-parse --short=12 HEAD)` names the commit that
# `--version`, /healthz and build_info report ("unknown" without it).
ARG BUILD_COMMIT
RUN bun run build --only "${SERVICE}" --target bun-linux-x64 && ldd "dist/${SERVICE}"

FROM scratch
ARG SERVICE
COPY --from=builder /lib64/ld-linux-x86-64.so.2 /lib64/ld-linux-x86-64.so.2
COPY --from=builder /lib/x86_64-linux-gnu/libc.so.6 /lib/x86_64-linux-gnu/libc.so.6
COPY --from=builder /lib/x86_64-linux-gnu/libm.so.6 /lib/x86_64-linux-gnu/libm.so.6
COPY --from=builder /lib/x86_64-linux-gnu/libpthread.so.0 /lib/x86_64-linux-gnu/libpthread.so.0
COPY --from=builder /lib/x86_64-linux-gnu/libdl.so.2 /lib/x86_64-linux-gnu/libdl.so.2
COPY --from=builder /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=builder /src/dist/${SERVICE} /app/service
USER 65532:65532
ENV HOST=0.0.0.0 NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
EXPOSE 8080 8081
ENTRYPOINT ["/app/service"]
CMD ["serve"]
