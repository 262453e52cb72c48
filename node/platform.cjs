'use strict';
// The platform's folder under the package's prebuilds/ (`linux-x64-gnu`), as npm's os, cpu and
// libc fields name it: where node/engine.cjs looks for the native addon, and where
// scripts/package.sh puts it.

function platformName() {
  let libc = '';
  if (process.platform === 'linux') {
    const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null;
    libc = report?.header?.glibcVersionRuntime ? '-gnu' : '-musl';
  }
  return `${process.platform}-${process.arch}${libc}`;
}

module.exports = { platformName };
