/** A gRPC error as @grpc/grpc-js raises it (what @temporalio/client wraps in a ServiceError). */
export const grpcError = (code: number, details: string) => Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
