// Node 20 (Debian's and NodeSource's current LTS here) lacks fs.globSync,
// which the conformance suite imports for its tier-check command only; the
// import alone stops the suite from loading. Loaded with `node --import`,
// this gives the suite's modules an fs that has it (and throws if called).
import { register } from 'node:module';

const shim = 'data:text/javascript,' + encodeURIComponent(`
export * from 'node:fs';
import fs from 'node:fs';
export default fs;
export function globSync() { throw new Error('fs.globSync needs Node 22'); }
`);

const hooks = `
export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL &&
      context.parentURL.includes('/@modelcontextprotocol/conformance/')) {
    return { url: ${JSON.stringify(shim)}, shortCircuit: true };
  }
  return next(specifier, context);
}
`;
register('data:text/javascript,' + encodeURIComponent(hooks));
