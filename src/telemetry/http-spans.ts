/**
 * A server span around each API request, continuing the caller's trace (W3C traceparent) when it
 * sends one. Written as express middleware rather than by patching `http`, so it works whatever
 * order modules load in; with no tracer provider it costs a no-op span per request.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { RequestHandler } from 'express';

const tracer = trace.getTracer('threadline-api');

export function traceRequests(): RequestHandler {
  return (req, res, next) => {
    const parent = propagation.extract(context.active(), req.headers);
    const span = tracer.startSpan(req.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method, 'url.path': req.path } }, parent);
    const active = trace.setSpan(parent, span);
    // Body parsing continues in the request stream's callbacks: bind them to the span's context.
    context.bind(active, req);
    context.bind(active, res);
    res.once('finish', () => {
      // The matched route, once routing is done: `POST /v1/runs/:runId/reply`, not the id itself.
      const route = (req.route as { path?: unknown } | undefined)?.path;
      if (typeof route === 'string') {
        const full = `${req.baseUrl}${route}`;
        span.setAttribute('http.route', full);
        span.updateName(`${req.method} ${full}`);
      }
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    res.once('close', () => {
      if (!res.writableFinished) span.end(); // the client went away before the answer (e.g. an event stream)
    });
    context.with(active, next);
  };
}
