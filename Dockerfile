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
# The worker runs compiled (dist/, scripts/build-worker.mjs): no TypeScript loader in its process.
RUN node scripts/build-worker.mjs

RUN mkdir -p /app/data && chown node:node /app/data
USER node

ENV DATA_DIR=/app/data \
    TEMPORAL_ADDRESS=temporal-frontend:7233 \
    TASK_QUEUE=threadline

# The worker by default, compiled, its V8 heap bounded (docs/operations.md "Worker memory"); the api service overrides
# this with `node --import tsx src/api/server.ts`. node itself, with tsx's loader: `npx tsx` would keep two more node
# processes (npx's and tsx's own) beside the one that runs the code.
CMD ["node", "--max-old-space-size=1024", "--enable-source-maps", "dist/worker.js"]
