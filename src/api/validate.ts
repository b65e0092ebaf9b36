/**
 * The one validation step of the API: a route declares zod schemas for its
 * params, query and body, and its handler receives the parsed values (typed
 * from the schemas). A request failing any of them is a 400 listing every issue.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';
import { scopeToCaller } from './authenticate';
import type { ErrorDetail } from './error-body';
import { ApiError } from './errors';

const PARTS = ['params', 'query', 'body'] as const;
type Part = (typeof PARTS)[number];

export type RequestSchemas = Partial<Record<Part, z.ZodType>>;
export type Parsed<S extends RequestSchemas> = {
  [P in Part]: S[P] extends z.ZodType ? z.output<S[P]> : undefined;
};

/** Builds the 400 for a request's zod issues. */
export function validationError(details: ErrorDetail[]): ApiError {
  const summary = details.map((d) => `${d.path}: ${d.message}`).join('; ');
  return new ApiError(400, 'invalid_request', `invalid request: ${summary}`, details);
}

/**
 * Wraps a route handler with validation.
 * @example
 * app.post('/v1/runs/:runId/reply', validated({ params: RunParams, body: ReplyBody }, async ({ params, body }, _req, res) => { … }));
 */
export function validated<S extends RequestSchemas>(schemas: S, handler: (input: Parsed<S>, req: Request, res: Response) => Promise<void> | void): RequestHandler {
  return async (req, res) => {
    const details: ErrorDetail[] = [];
    const input: Partial<Record<Part, unknown>> = {};
    for (const part of PARTS) {
      const schema = schemas[part];
      if (!schema) continue;
      // With API keys, a user's request names that user (taken from the key when missing).
      const raw = part === 'params' ? req.params : scopeToCaller(res, part, req[part]);
      const result = schema.safeParse(raw);
      if (result.success) input[part] = result.data;
      else details.push(...result.error.issues.map((i) => ({ path: i.path.length ? i.path.join('.') : part, message: i.message })));
    }
    if (details.length > 0) throw validationError(details);
    await handler(input as Parsed<S>, req, res);
  };
}
