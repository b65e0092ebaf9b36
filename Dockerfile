# Threadline worker and REST API (one image; docker-compose.yml runs it twice with different commands).
FROM node:20-slim

WORKDIR /app
ENV NODE_ENV=production

# Dependencies first, so source edits don't invalidate this layer. tsx is a runtime dependency
# (the entry points run as TypeScript); dev dependencies (typescript, test tools) are left out.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
# The worker and the API run compiled (dist/, scripts/build.mjs): no TypeScript loader in their processes.
RUN node scripts/build.mjs

RUN mkdir -p /app/data && chown node:node /app/data
USER node

# MALLOC_ARENA_MAX: two malloc arenas, not one per thread (docs/operations.md "Worker memory").
ENV DATA_DIR=/app/data \
    MALLOC_ARENA_MAX=2 \
    TEMPORAL_ADDRESS=temporal-frontend:7233 \
    TASK_QUEUE=threadline

# The worker by default, its V8 heap bounded and its young generation halved, and source maps for
# Threadline's own code only (docs/operations.md "Worker memory"). The api service overrides this with
# `node --enable-source-maps --require=./dist/telemetry/own-source-maps.js dist/api/server.js`. node
# itself: `npx` or `npm run` would keep more node processes beside the one that runs the code.
CMD ["node", "--max-old-space-size=1024", "--max-semi-space-size=8", "--enable-source-maps", "--require=./dist/telemetry/own-source-maps.js", "dist/worker.js"]
