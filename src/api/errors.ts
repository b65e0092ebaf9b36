/**
 * The API's one error shape, `{ error: { code, message, details? } }`, and the
 * one place that maps errors onto it. Routes just throw.
 */
import { ValueError } from '@temporalio/common';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { MemoryRefusedError, StateNotFoundError, ThreadNotFoundError } from '../store/memory-service';
import { LongTermVetoError } from '../longterm/redact';
import { GrpcCode, hasGrpcCode } from '../temporal/grpc-status';
import { isAttemptTimeout } from '../temporal/resend';
import { RunNotFoundError, RunNotWaitingError, TaskNotFoundError, TaskNotNowError } from '../temporal/runs';
import { MessageRejectedError, SessionClosedError, SessionNotFoundError } from '../temporal/sessions';
import { ScheduleNotFoundError, ScheduleRefusedError } from '../temporal/schedules';
import { VersionNotFoundError } from '../temporal/run-history';
import { ForkRefusedError } from '../temporal/forks';
import type { ErrorBody, ErrorCode, ErrorDetails } from './error-body';

/** An error that already knows its HTTP status and code. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetails,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** What body-parser (behind `express.json`) throws: an http-errors error with `type`, `status`, `expose`. */
interface BodyParserError extends Error {
  status: number;
  type?: string;
  expose: boolean;
}
const isBodyParserError = (err: unknown): err is BodyParserError =>
  err instanceof Error && typeof (err as Partial<BodyParserError>).status === 'number' && (err as Partial<BodyParserError>).expose === true;

/** gRPC DEADLINE_EXCEEDED and UNAVAILABLE: Temporal, or the worker a query needs, did not answer (an update: isAttemptTimeout). */
const isTemporalUnavailable = (err: unknown) => hasGrpcCode(err, [GrpcCode.DEADLINE_EXCEEDED, GrpcCode.UNAVAILABLE]);

function toApiError(err: unknown): ApiError | null {
  if (err instanceof ApiError) return err;
  if (isTemporalUnavailable(err) || isAttemptTimeout(err)) {
    return new ApiError(503, 'unavailable', 'Temporal, or a worker for this run or session, did not answer in time; try again');
  }
  if (err instanceof RunNotFoundError) return new ApiError(404, 'not_found', err.message);
  if (err instanceof RunNotWaitingError) return new ApiError(409, 'not_waiting', err.message);
  if (err instanceof TaskNotFoundError) return new ApiError(404, 'not_found', err.message);
  if (err instanceof TaskNotNowError) return new ApiError(409, 'not_now', err.message);
  if (err instanceof SessionNotFoundError) return new ApiError(404, 'not_found', err.message);
  if (err instanceof ScheduleNotFoundError) return new ApiError(404, 'not_found', err.message);
  if (err instanceof VersionNotFoundError) return new ApiError(404, 'not_found', err.message);
  if (err instanceof ForkRefusedError) return err.kind === 'unknown' ? new ApiError(404, 'not_found', err.message) : new ApiError(409, 'not_now', err.message);
  if (err instanceof ScheduleRefusedError) return new ApiError(400, 'invalid_request', err.message);
  if (err instanceof SessionClosedError) return new ApiError(409, 'session_closed', err.message);
  if (err instanceof MessageRejectedError) return new ApiError(422, 'refused', err.message);
  if (err instanceof ThreadNotFoundError || err instanceof StateNotFoundError) return new ApiError(404, 'not_found', err.message);
  if (err instanceof MemoryRefusedError) return new ApiError(422, 'refused', err.message, { code: err.code });
  if (err instanceof ValueError) return new ApiError(422, 'refused', err.message);
  if (err instanceof LongTermVetoError) return new ApiError(422, 'refused', err.message, { vetoedBy: err.vetoedBy });
  // The router could not decode a path segment (invalid percent-encoding, e.g. a lone surrogate).
  if (err instanceof URIError) return new ApiError(400, 'invalid_request', err.message);
  if (isBodyParserError(err) && err.status >= 400 && err.status < 500) {
    if (err.type === 'entity.parse.failed') return new ApiError(400, 'invalid_request', `request body is not valid JSON: ${err.message}`);
    if (err.status === 413) return new ApiError(413, 'payload_too_large', err.message);
    if (err.status === 415) return new ApiError(415, 'unsupported_media_type', err.message);
    return new ApiError(err.status, 'invalid_request', err.message);
  }
  return null;
}

export function sendError(res: Parameters<RequestHandler>[1], err: ApiError): void {
  const body: ErrorBody = { error: { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) } };
  res.status(err.status).json(body);
}

/** Unknown routes: a JSON 404 rather than express's HTML page. */
export const notFoundRoute: RequestHandler = (req, res) => {
  sendError(res, new ApiError(404, 'not_found', `no route for ${req.method} ${req.path}`));
};

/** Maps known errors to their status; anything else is logged and answered with a bare 500, never crashing the process. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const known = toApiError(err);
    if (!known) logger.error({ err, method: req.method, url: req.originalUrl }, 'request failed');
    else if (known.status >= 500) logger.warn({ err, method: req.method, url: req.originalUrl }, known.message);
    if (res.headersSent) {
      // A stream (SSE) already started: all we can do is end it.
      res.end();
      return;
    }
    sendError(res, known ?? new ApiError(500, 'internal', 'internal error'));
  };
}
