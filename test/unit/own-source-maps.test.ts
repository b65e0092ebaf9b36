import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { withoutMapComment } from '../../src/telemetry/own-source-maps';

test('a module loses its source-map comment only when that is its last line', () => {
  assert.equal(withoutMapComment('let a = 1;\n//# sourceMappingURL=a.js.map\n'), 'let a = 1;\n');
  assert.equal(withoutMapComment('let a = 1;\n//# sourceMappingURL=data:application/json;base64,e30=  \n\n'), 'let a = 1;\n');
  const quoted = 'const s = "\\n//# sourceMappingURL=";\nlet b = 2;\n';
  assert.equal(withoutMapComment(quoted), quoted);
  const code = 'let c = 3;\n/* no map */\n';
  assert.equal(withoutMapComment(code), code);
});

test('with the hook, a package under node_modules keeps no source map and our own code keeps its', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'own-maps-'));
  const own = path.join(dir, 'own.js');
  // A one-mapping inline map: enough for Node to cache it.
  const map = Buffer.from(JSON.stringify({ version: 3, sources: ['own.ts'], names: [], mappings: 'AAAA' })).toString('base64');
  writeFileSync(own, `module.exports = 1;\n//# sourceMappingURL=data:application/json;base64,${map}\n`);
  const hook = path.resolve(__dirname, '../../src/telemetry/own-source-maps.ts');
  const script = `
    const { findSourceMap } = require('node:module');
    const load = (hooked) => { if (hooked) require(${JSON.stringify(hook)}); require('luxon'); require(${JSON.stringify(own)}); };
    load(process.argv[1] === 'hooked');
    console.log(JSON.stringify({ pkg: findSourceMap(require.resolve('luxon')) !== undefined, own: findSourceMap(${JSON.stringify(own)}) !== undefined }));`;
  const run = (mode: string) => {
    const out = spawnSync(process.execPath, ['--enable-source-maps', '--import', 'tsx', '-e', script, mode], { cwd: path.resolve(__dirname, '../..'), encoding: 'utf8' });
    assert.equal(out.status, 0, out.stderr);
    return JSON.parse(out.stdout.trim().split('\n').at(-1)!) as { pkg: boolean; own: boolean };
  };
  assert.deepEqual(run('plain'), { pkg: true, own: true }, 'without the hook both maps are kept (the package ships one)');
  assert.deepEqual(run('hooked'), { pkg: false, own: true });
});
