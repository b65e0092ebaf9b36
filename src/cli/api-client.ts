/**
 * A small client of the REST API v1 (DESIGN.md §4) for the chat CLI: start a
 * run, read it, reply to it, and follow its Server-Sent Events; create or read
 * a session and send it messages. Every response
 * is validated with zod; network failures become one readable error.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { z } from 'zod';
import { FactSchema, RecordedFactSchema, SearchResultsSchema } from '../api/longterm-schemas';
import {
  ErrorBodySchema,
  ExecutionStateSchema,
  MessageOutcomeSchema,
  RunStartedSchema,
  SessionCreatedSchema,
  SessionViewSchema,
  TokenEventSchema,
  TokenResetEventSchema,
} from '../api/response-schemas';
import { ScheduleListSchema } from '../api/schedule-schemas';
import type { FactInput } from '../longterm/contract';
import type { MessageOutcome, RunState, SessionState, TokenEvent } from './render';

/** The API did not answer at all (not running, wrong address, connection dropped). */
export class ApiUnreachableError extends Error {
  constructor(
    readonly baseUrl: string,
    readonly reason: string,
  ) {
    super(`cannot reach the Threadline API at ${baseUrl} (${reason}) — is \`npm start\` running? Set THREADLINE_API_URL to use another address.`);
    this.name = 'ApiUnreachableError';
  }
}

/** The API answered with an error status; `code` and `message` come from its `{ error }` body when it sent one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(`API error ${status} (${code}): ${message}`);
    this.name = 'ApiError';
  }
}

export type StartedRun = z.infer<typeof RunStartedSchema>;
export type CreatedSession = z.infer<typeof SessionCreatedSchema>;

/** `token` and `token_reset`: live tokens of the run's model calls (issue 29). */
export type RunEvent = { type: 'state'; state: RunState } | { type: 'done' } | { type: 'token'; token: TokenEvent } | { type: 'token_reset'; callId: string };

/** Why `fetch` failed, as short as possible: `ECONNREFUSED`, `ENOTFOUND`, … */
function networkReason(err: unknown): string {
  const cause = err instanceof Error ? (err.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return err instanceof Error ? err.message : String(err);
}

/** The error of a non-2xx response, from its `{ error }` body when it has one. */
function apiError(res: Response, text: string): ApiError {
  let body: unknown = null;
  try {
    body = JSON.parse(text) as unknown;
  } catch {
    // A proxy's HTML error page, say: reported by status below.
  }
  const error = ErrorBodySchema.safeParse(body);
  return error.success ? new ApiError(res.status, error.data.error.code, error.data.error.message) : new ApiError(res.status, 'http_error', text.slice(0, 200) || res.statusText);
}

const isAbort = (err: unknown): boolean => err instanceof Error && err.name === 'AbortError';

function parseBody<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new Error(`the API sent ${what} this client cannot read: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

export class ApiClient {
  readonly baseUrl: string;

  /** @param apiKey sent as `Authorization: Bearer <key>` when the API asks for keys (THREADLINE_AUTH=apikey). */
  constructor(
    baseUrl: string,
    private readonly apiKey?: string,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  private async request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.apiKey) headers.set('authorization', `Bearer ${this.apiKey}`);
    try {
      return await fetch(`${this.baseUrl}${path}`, { ...init, headers });
    } catch (err) {
      if (isAbort(err)) throw err;
      throw new ApiUnreachableError(this.baseUrl, networkReason(err));
    }
  }

  private async json(path: string, method: 'GET' | 'POST' | 'DELETE', body?: unknown): Promise<unknown> {
    const res = await this.request(path, {
      method,
      headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw apiError(res, text);
    try {
      return text ? (JSON.parse(text) as unknown) : null;
    } catch {
      throw new Error(`the API answered ${method} ${path} with something that is not JSON: ${text.slice(0, 200)}`);
    }
  }

  /** `GET /healthz`: true when the API can reach Temporal. Throws ApiUnreachableError when the API is down. */
  async healthy(): Promise<boolean> {
    const res = await this.request('/healthz');
    await res.text();
    return res.ok;
  }

  async startRun(request: { userId: string; goal: string; engine?: 'plan' | 'tree' | 'react'; review?: boolean; approval?: string[] }): Promise<StartedRun> {
    return parseBody(RunStartedSchema, await this.json('/v1/runs', 'POST', request), 'a start response');
  }

  async getRun(runId: string): Promise<RunState> {
    return parseBody(ExecutionStateSchema, await this.json(`/v1/runs/${encodeURIComponent(runId)}`, 'GET'), 'a run state');
  }

  async createSession(request: { userId: string; approval?: string[] }): Promise<CreatedSession> {
    return parseBody(SessionCreatedSchema, await this.json('/v1/sessions', 'POST', request), 'a session');
  }

  async getSession(sessionId: string): Promise<SessionState> {
    return parseBody(SessionViewSchema, await this.json(`/v1/sessions/${encodeURIComponent(sessionId)}`, 'GET'), 'a session');
  }

  /** Sends a message to the session; answers what became of it (a command's reply, the run it started or answered). */
  async sendMessage(sessionId: string, text: string): Promise<MessageOutcome> {
    return parseBody(MessageOutcomeSchema, await this.json(`/v1/sessions/${encodeURIComponent(sessionId)}/messages`, 'POST', { text }), 'a message outcome');
  }

  /** Long-term memory: records a fact the person states (`/remember`). */
  async rememberFact(userId: string, fact: FactInput) {
    return parseBody(RecordedFactSchema, await this.json(`/v1/users/${encodeURIComponent(userId)}/facts`, 'POST', fact), 'a recorded fact');
  }

  /** Ends a fact's validity (`/forget`): it stays in its history. */
  async forgetFact(userId: string, factId: string) {
    return parseBody(FactSchema, await this.json(`/v1/users/${encodeURIComponent(userId)}/facts/${encodeURIComponent(factId)}`, 'DELETE'), 'a fact');
  }

  /** Searches the person's long-term memory (`/memory`). */
  async searchMemory(userId: string, query: string) {
    return parseBody(SearchResultsSchema, await this.json(`/v1/users/${encodeURIComponent(userId)}/memory/search`, 'POST', { query, k: 8 }), 'search results');
  }

  /** The person's schedules (issue 33), with their next runs and latest runs. */
  async listSchedules(userId: string) {
    return parseBody(ScheduleListSchema, await this.json(`/v1/schedules?userId=${encodeURIComponent(userId)}`, 'GET'), 'a schedule list');
  }

  /** Deletes one of the person's schedules (404 — another's, or none — is the API's error). */
  async deleteSchedule(scheduleId: string): Promise<void> {
    await this.json(`/v1/schedules/${encodeURIComponent(scheduleId)}`, 'DELETE');
  }

  /** Delivers the reply; `not_waiting` when the run no longer waits for one (HTTP 409). */
  async reply(runId: string, text: string): Promise<'accepted' | 'not_waiting'> {
    try {
      await this.json(`/v1/runs/${encodeURIComponent(runId)}/reply`, 'POST', { text });
      return 'accepted';
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) return 'not_waiting';
      throw err;
    }
  }

  /** A tree run's plan review; `refused` (HTTP 409) when the run no longer waits for a review of that plan. */
  async review(runId: string, body: { decision: 'approve' | 'revise' | 'reject'; planId: string; tree?: unknown; feedback?: string }): Promise<'accepted' | 'refused'> {
    try {
      await this.json(`/v1/runs/${encodeURIComponent(runId)}/review`, 'POST', body);
      return 'accepted';
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) return 'refused';
      throw err;
    }
  }

  /** A decision on the tool call the run waits to have approved; `refused` when it no longer waits (409), the API's message for bad args (400). */
  async approve(runId: string, body: { stepId: string; decision: 'approve' | 'reject' | 'edit'; args?: Record<string, unknown>; feedback?: string }): Promise<'accepted' | 'refused' | string> {
    try {
      await this.json(`/v1/runs/${encodeURIComponent(runId)}/approval`, 'POST', body);
      return 'accepted';
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) return 'refused';
      if (err instanceof ApiError && err.status === 400) return err.message;
      throw err;
    }
  }

  /** Skips or redoes a task of a tree run; the API's message when it cannot be done now (404, 409). */
  async steer(runId: string, action: 'skip' | 'redo', index: string, reason?: string): Promise<'accepted' | string> {
    try {
      await this.json(`/v1/runs/${encodeURIComponent(runId)}/tasks/${encodeURIComponent(index)}/${action}`, 'POST', reason ? { reason } : {});
      return 'accepted';
    } catch (err) {
      if (err instanceof ApiError && (err.status === 409 || err.status === 404)) return err.message;
      throw err;
    }
  }

  /**
   * Follows `GET /v1/runs/:id/events` until the server ends the stream or
   * `signal` aborts. A dropped connection ends the iteration early without
   * `done`; the caller decides whether to reconnect.
   */
  async *events(runId: string, signal?: AbortSignal): AsyncGenerator<RunEvent> {
    const res = await this.request(`/v1/runs/${encodeURIComponent(runId)}/events`, {
      headers: { accept: 'text/event-stream' },
      signal,
    });
    if (!res.ok || !res.body) throw apiError(res, await res.text());
    const messages: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (message) => messages.push(message) });
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body) {
        parser.feed(decoder.decode(chunk, { stream: true }));
        for (let message = messages.shift(); message; message = messages.shift()) {
          if (message.event === 'done') {
            yield { type: 'done' };
            return;
          }
          if (message.event === 'token') {
            const token = TokenEventSchema.safeParse(JSON.parse(message.data));
            if (token.success) yield { type: 'token', token: token.data };
            continue;
          }
          if (message.event === 'token_reset') {
            const reset = TokenResetEventSchema.safeParse(JSON.parse(message.data));
            if (reset.success) yield { type: 'token_reset', callId: reset.data.callId };
            continue;
          }
          if (message.event === 'state') {
            yield { type: 'state', state: parseBody(ExecutionStateSchema, JSON.parse(message.data) as unknown, 'a state event') };
          }
        }
      }
    } catch (err) {
      // A connection reset mid-stream ends the stream like a server close would; aborts propagate.
      if (isAbort(err) || signal?.aborted) throw err;
      if (err instanceof TypeError && /terminated|socket|other side closed/i.test(`${err.message} ${networkReason(err)}`)) return;
      throw err;
    }
  }
}
