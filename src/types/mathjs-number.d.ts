// mathjs's number-only entry (package.json "exports": "./number"), which this project's `node`
// module resolution cannot find types for: it has the same API as the full build.
declare module 'mathjs/number' {
  export * from 'mathjs';
}
