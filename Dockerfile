# syntax=docker/dockerfile:1
# Build stage: the root's dev dependencies + TypeScript compile. The benchmark's
# peers have their own bench/package.json, so this install does not fetch them.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Runtime stage: production dependencies only, non-root.
FROM node:24-bookworm-slim
# BEARWARD_LISTEN: the example config listens on loopback unless told
# otherwise; in a container that is the network's address. With the example's
# public demo secrets still in it, bearward then refuses to start until a real
# config is mounted (or BEARWARD_ALLOW_DEMO=1 says the demo is meant).
ENV NODE_ENV=production \
    BEARWARD_CONFIG=/etc/bearward/gateway.yaml \
    BEARWARD_LISTEN=0.0.0.0:8080
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY config ./config
# The config is mounted at /etc/bearward (a ConfigMap or a bind mount); the
# image's example is the fallback.
RUN mkdir -p /etc/bearward && cp config/gateway.yaml /etc/bearward/gateway.yaml && chown -R node:node /etc/bearward
USER node
EXPOSE 8080 9090
# Runs inside the container: the default admin_listen (127.0.0.1:9090) answers it. Probes from
# outside (the kubelet, a load balancer) need admin_listen: 0.0.0.0:9090.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:9090/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# The V8 flags: see docs/performance.md.
ENTRYPOINT ["node", "--no-memory-reducer", "--max-semi-space-size=8", "--heap-growing-percent=100", "bin/bearward"]
CMD ["start"]
