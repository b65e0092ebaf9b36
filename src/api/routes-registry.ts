/**
 * Where routes are declared and described at once, so the API description (`GET /openapi.json`,
 * src/api/openapi.ts) cannot drift from what the app serves: `documented(router, tag).post(path,
 * spec, handler)` mounts the route with `validated(spec.request, handler)` behind `spec.use`, and
 * records its method, path, request schemas (the very zod objects that validate it), responses and
 * summary. `mount(app, router)` mounts a router and links its routes into the app's.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';
import { validated, type Parsed, type RequestSchemas } from './validate';

export const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
export type Method = (typeof METHODS)[number];

/** Statuses the API answers with the error envelope; 400 (when the route validates) and 401 (with API keys) are implied. */
export type ErrorStatus = 403 | 404 | 409 | 413 | 415 | 422 | 429 | 503;

export interface ResponseDoc {
  description: string;
  /** The JSON body; absent: no body, or one the API has no schema for. */
  schema?: z.ZodType;
  /** @default "application/json" (with `schema`); `text/event-stream` for Server-Sent Events. */
  contentType?: 'application/json' | 'text/event-stream' | 'text/html';
}

export interface RouteSpec<S extends RequestSchemas = RequestSchemas> {
  /** One line on what the route does. */
  summary: string;
  description?: string;
  /** What `validated` checks, and what the description shows. */
  request?: S;
  /** The successful answers, by status. */
  responses: Readonly<Record<number, ResponseDoc>>;
  /** Other errors the route answers (with their meaning). */
  errors?: Readonly<Partial<Record<ErrorStatus, string>>>;
  /** Middleware run before validation: limits, budgets, body parsers. */
  use?: readonly RequestHandler[];
  /** Answers without an API key (mounted before authentication). */
  public?: boolean;
}

/** A route as the API description sees it. */
export interface RouteDoc extends Omit<RouteSpec, 'use'> {
  method: Method;
  /** Express syntax: `/v1/runs/:runId`. */
  path: string;
  /** The group it is listed under, e.g. `runs`. */
  tag: string;
}

type Handler<S extends RequestSchemas> = (input: Parsed<S>, req: Request, res: Response) => Promise<void> | void;

/** Declares routes on `target`, each described as it is mounted. */
export type DocumentedRoutes = {
  [M in Method]: <S extends RequestSchemas = Record<never, never>>(path: string, spec: RouteSpec<S>, handler: Handler<S>) => void;
};

/** What routes can be mounted on: an express app or router. */
export interface RouteTarget {
  use(...handlers: RequestHandler[]): unknown;
  get(path: string, ...handlers: RequestHandler[]): unknown;
  post(path: string, ...handlers: RequestHandler[]): unknown;
  put(path: string, ...handlers: RequestHandler[]): unknown;
  patch(path: string, ...handlers: RequestHandler[]): unknown;
  delete(path: string, ...handlers: RequestHandler[]): unknown;
}

/** A target's own routes and the registries of the routers mounted on it, in the order they were added. */
type Entry = RouteDoc | { mounted: Entry[] };
const registries = new WeakMap<object, Entry[]>();

function registryOf(target: object): Entry[] {
  let entries = registries.get(target);
  if (!entries) registries.set(target, (entries = []));
  return entries;
}

export function documented(target: RouteTarget, tag: string): DocumentedRoutes {
  const entries = registryOf(target);
  const declare =
    (method: Method) =>
    <S extends RequestSchemas>(path: string, spec: RouteSpec<S>, handler: Handler<S>): void => {
      const { use = [], ...doc } = spec;
      target[method](path, ...use, validated<S>(spec.request ?? ({} as S), handler));
      entries.push({ ...doc, method, path, tag });
    };
  return { get: declare('get'), post: declare('post'), put: declare('put'), patch: declare('patch'), delete: declare('delete') };
}

/** Mounts `router` (all of its paths absolute) on `target`; its routes become part of `target`'s description. */
export function mount(target: RouteTarget, router: RequestHandler): void {
  target.use(router);
  registryOf(target).push({ mounted: registryOf(router) });
}

/** Every route declared on `target` and on the routers mounted on it, in the order they were added. */
export function routesOf(target: object): RouteDoc[] {
  const flatten = (entries: Entry[]): RouteDoc[] => entries.flatMap((e) => ('mounted' in e ? flatten(e.mounted) : [e]));
  return flatten(registries.get(target) ?? []);
}
