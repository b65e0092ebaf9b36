/**
 * The memory inspector (`GET /inspector`, issue 12): a page that reads and edits memory through the
 * REST API only. Plain ES modules with Preact + htm straight from node_modules (no build step),
 * tied together by the page's import map. Mounted before authentication: the page and its scripts
 * hold no data; every API call it makes sends the key the person enters.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
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

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

export function inspectorRouter(options: InspectorOptions): Router {
  const router = Router();
  // Read once: the page is small and does not change while the server runs.
  const page = readFileSync(path.join(PAGE_DIR, 'index.html'), 'utf8').replace('%RUN_UI_PREFIX%', escapeAttr(options.runUiPrefix));
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
  // A file not found falls through to the app's own 404 (or 401 without a key), as any unknown path.
  for (const [name, dir] of Object.entries(VENDOR)) router.use(`/inspector/vendor/${name}`, express.static(dir, { index: false }));
  const modules = express.static(PAGE_DIR, { index: false });
  // Only the page's modules: not the route's own source beside them.
  router.use('/inspector', (req, res, next) => (/^\/[a-z-]+\.js$/.test(req.path) ? modules(req, res, next) : next()));
  return router;
}
