/**
 * The memory inspector (`GET /inspector`, issue 12): a page that reads and edits memory through the
 * REST API only. Plain ES modules with Preact + htm straight from node_modules (no build step),
 * tied together by the page's import map. Mounted before authentication: the page and its scripts
 * hold no data; every API call it makes sends the key the person enters.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import express, { Router } from 'express';
import { documented } from '../routes-registry';

export interface InspectorOptions {
  /** Where a run opens in the Temporal Web UI, less the run id (`runUiUrl(config, '')`). */
  runUiPrefix: string;
}

/** The page's own files: index.html and the modules beside it. */
const PAGE_DIR = __dirname;
/** The vendored modules the import map names, each a directory of node_modules served as is. */
const VENDOR: Record<string, string> = {
  preact: path.dirname(require.resolve('preact')),
  'preact-hooks': path.dirname(require.resolve('preact/hooks')),
  htm: path.dirname(require.resolve('htm')),
};

/**
 * `schemas.js`: responses.ts with the API's response schemas and zod, bundled for the browser once,
 * on the first request (about a second of esbuild; the page loads it before it calls the API). A
 * schema module that reaches server code by value fails this build: the page's bundle stays pure.
 */
let schemasModule: Promise<string> | undefined;
export function inspectorSchemas(): Promise<string> {
  schemasModule ??= build({
    entryPoints: [path.join(PAGE_DIR, 'responses.ts')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    write: false,
    logLevel: 'silent',
  }).then((out) => out.outputFiles[0]!.text);
  schemasModule.catch(() => (schemasModule = undefined)); // a failed build is tried again on the next request
  return schemasModule;
}

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** CSP source expressions for each inline block of `tag` in `page` (the import map, the style sheet). */
function inlineHashes(page: string, tag: 'script' | 'style'): string {
  const blocks = [...page.matchAll(new RegExp(`<${tag}(?![^>]*\\bsrc=)[^>]*>([\\s\\S]*?)</${tag}>`, 'g'))];
  return blocks
    .map(
      (m) =>
        `'sha256-${createHash('sha256')
          .update(m[1] ?? '')
          .digest('base64')}'`,
    )
    .join(' ');
}

/**
 * What the page may do: its own scripts and inline blocks only, calls to this API only, never
 * framed (clickjacking the rollback button). The page holds a person's API key: a script injected
 * through memory content it renders must find nowhere to run and nowhere to send it.
 */
function securityHeaders(page: string): Record<string, string> {
  const policy = [
    "default-src 'none'",
    `script-src 'self' ${inlineHashes(page, 'script')}`,
    `style-src ${inlineHashes(page, 'style')}`,
    "connect-src 'self'",
    "img-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return { 'content-security-policy': policy, 'x-frame-options': 'DENY', 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };
}

export function inspectorRouter(options: InspectorOptions): Router {
  const router = Router();
  // Read once: the page is small and does not change while the server runs.
  const page = readFileSync(path.join(PAGE_DIR, 'index.html'), 'utf8').replace('%RUN_UI_PREFIX%', escapeAttr(options.runUiPrefix));
  const headers = securityHeaders(page);
  router.use('/inspector', (_req, res, next) => {
    res.set(headers);
    next();
  });
  // Also answers `/inspector/` (routing is not strict). The page's modules below are static files, not routes.
  documented(router, 'inspector').get(
    '/inspector',
    {
      summary: 'The memory inspector: a page that reads and edits memory through this API',
      public: true,
      responses: { 200: { description: 'The page; its API calls send the key a person enters', contentType: 'text/html' } },
    },
    (_input, _req, res) => {
      res.type('html').set('cache-control', 'no-cache').send(page);
    },
  );
  // The page's module of response schemas, built from the API's own (a module like the others, not a route).
  router.use('/inspector/schemas.js', (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    inspectorSchemas().then((code) => res.type('text/javascript').set('cache-control', 'no-cache').send(code), next);
  });
  // A file not found falls through to the app's own 404 (or 401 without a key), as any unknown path.
  for (const [name, dir] of Object.entries(VENDOR)) router.use(`/inspector/vendor/${name}`, express.static(dir, { index: false }));
  const modules = express.static(PAGE_DIR, { index: false });
  // Only the page's modules: not the route's own source beside them.
  router.use('/inspector', (req, res, next) => (/^\/[a-z-]+\.js$/.test(req.path) ? modules(req, res, next) : next()));
  return router;
}
