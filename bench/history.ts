import { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;

/** Size of a workflow history as the encoded History protobuf — what the benchmarks report as bytes. */
export function encodedBytes(history: History): number {
  return temporal.api.history.v1.History.encode(history).finish().length;
}
