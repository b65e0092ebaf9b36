/**
 * Source maps for Threadline's own code only. The worker and the API run with `--enable-source-maps`,
 * so their stack traces name src/*.ts; Node would also read and keep the map of every package under
 * node_modules that ships one (luxon, grpc-js, OpenTelemetry, the SDK), in every thread: ≈ 6 MB of an
 * idle worker's main heap and ≈ 20 MB of its peak with 1,000 runs waiting (bench/results/HISTORY.md).
 * A package's frames name its own JavaScript instead. Every start of the worker and the API loads this
 * with `--require` (scripts/lib.mjs SOURCE_MAP_FLAGS), so it runs before any package loads, in the
 * workflow threads too; packages loaded as ES modules keep their maps.
 */
import path from 'node:path';
import { addHook } from 'pirates';

const MAP_COMMENT = '\n//# sourceMappingURL=';
const IN_PACKAGES = `${path.sep}node_modules${path.sep}`;

/** `code` without its source-map comment, when that is its last line (a string holding the text elsewhere is code). */
export function withoutMapComment(code: string): string {
  const at = code.lastIndexOf(MAP_COMMENT);
  const lastLine = at === -1 ? undefined : code.slice(at + 1).trimEnd();
  return lastLine === undefined || lastLine.includes('\n') ? code : code.slice(0, at + 1);
}

addHook(withoutMapComment, { exts: ['.js', '.cjs'], ignoreNodeModules: false, matcher: (file) => file.includes(IN_PACKAGES) });
