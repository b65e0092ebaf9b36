/**
 * gRPC status codes of errors from @temporalio/client, read in one place (numbers as on the wire:
 * @grpc/grpc-js, which names them, is not a direct dependency).
 */
import { isGrpcServiceError } from '@temporalio/client';

export const GrpcCode = { DEADLINE_EXCEEDED: 4, FAILED_PRECONDITION: 9, UNAVAILABLE: 14 } as const;

/** Whether `err`, or an error in its cause chain, is a gRPC error with one of `codes`. */
export function hasGrpcCode(err: unknown, codes: readonly number[]): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (isGrpcServiceError(e) && codes.includes(e.code)) return true;
  }
  return false;
}
