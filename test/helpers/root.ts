/**
 * The repository's root, for a test that reads or runs a file of it (fixtures, scripts, the
 * build). A test runs from its source under tsx (`test/…`) or from the build that scripts/test.mjs
 * makes of the sources (`build/test/…`, scripts/build-tests.mjs): the root is the folder above
 * either with berth's package.json, not a fixed number of `..` from the test.
 */
import { packageRoot } from '../../src/package-root.js';

export const ROOT = packageRoot(import.meta.dirname);
