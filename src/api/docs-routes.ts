/**
 * The API's own description: `GET /openapi.json` (OpenAPI 3.1) and `GET /docs` (the same as a
 * page). Both are public, like `/healthz`: mounted before authentication, they hold no data.
 */
import { Router } from 'express';
import { renderDocsPage } from './docs-page';
import type { OpenApiDocument } from './openapi';
import { documented } from './routes-registry';

/** `describe` builds the document once every route is declared (at the first request). */
export function apiDocsRouter(describe: () => OpenApiDocument): Router {
  const router = Router();
  const routes = documented(router, 'meta');
  let page: string | undefined;
  routes.get(
    '/openapi.json',
    {
      summary: 'This API description (OpenAPI 3.1, generated from the zod schemas the routes validate with)',
      public: true,
      responses: { 200: { description: 'The OpenAPI document', contentType: 'application/json' } },
    },
    (_input, _req, res) => {
      res.set('cache-control', 'no-cache').json(describe());
    },
  );
  routes.get(
    '/docs',
    { summary: 'This API description as a page', public: true, responses: { 200: { description: 'An HTML page listing every route with its schemas', contentType: 'text/html' } } },
    (_input, _req, res) => {
      page ??= renderDocsPage(describe());
      res.type('html').set('cache-control', 'no-cache').send(page);
    },
  );
  return router;
}
