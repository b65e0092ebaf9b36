/**
 * DNS rebinding on the loopback API: with THREADLINE_AUTH=none the API trusts every caller, and
 * a web page whose host name an attacker points at 127.0.0.1 could reach it from a browser. The
 * browser still sends that page's host name in `Host`, so a request naming any host but a
 * loopback one is refused (403) before it reaches a route.
 */
import type { RequestHandler } from 'express';
import { ApiError } from './errors';

/** Whether `host` (a name or address, no port) is this machine's loopback. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** The host name of a `Host` header value, without its port (IPv6 addresses keep their brackets). */
export function hostNameOf(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  return h.replace(/:\d+$/, '');
}

/** Refuses requests whose `Host` is not a loopback name (or `bound`, the address the API listens on). */
export function loopbackHostsOnly(bound: string): RequestHandler {
  return (req, _res, next) => {
    const name = hostNameOf(req.headers.host ?? '');
    if (isLoopback(name) || name === bound.toLowerCase()) return next();
    next(new ApiError(403, 'forbidden', `this API answers only on its loopback address, not on host "${name}" (THREADLINE_AUTH=none)`));
  };
}
