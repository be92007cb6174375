/**
 * What the CLI prints for a person: text that came from a job (a reason, a message, a name) is
 * data, and reaches the terminal escaped (docs/SECURITY.md, "What a job sends"). A job that ended
 * with an escape sequence in its message must not retitle an admin's window, move the cursor or
 * rewrite what was printed before it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fields, printable, table } from '../../src/cli/output.js';

describe('text from a job, printed for a person', () => {
  const cases: [string, string, string][] = [
    ['plain text and Unicode stay', 'exited with code 3 — données', 'exited with code 3 — données'],
    ['ESC and BEL: a window title', '\u001b]0;pwned\u0007', '\\x1b]0;pwned\\x07'],
    ['a colour and a cursor move', '\u001b[31mred\u001b[2J', '\\x1b[31mred\\x1b[2J'],
    ['CR rewrites the line, LF breaks the table', 'ok\rFAILED\nnext', 'ok\\rFAILED\\nnext'],
    ['a tab', 'a\tb', 'a\\tb'],
    ['NUL and DEL', '\u0000\u007f', '\\x00\\x7f'],
    ['C1 controls (8-bit CSI)', '\u009b31m', '\\x9b31m'],
    ['a right-to-left override reorders what is read', 'abc\u202edcba', 'abc\\u202edcba'],
  ];
  for (const [name, input, shown] of cases)
    it(name, () => {
      assert.equal(printable(input), shown);
    });

  it('is what tables and fields print', () => {
    const evil = 'done\u001b]0;x\u0007\r';
    assert.equal(table(['ID', 'REASON'], [[1, evil]]), 'ID  REASON\n1   done\\x1b]0;x\\x07\\r');
    assert.equal(fields([['reason', evil]]), 'reason: done\\x1b]0;x\\x07\\r');
    for (const out of [
      table(['R'], [[evil]]),
      fields([
        ['r', evil],
        ['list', [evil]],
      ]),
    ])
      // eslint-disable-next-line no-control-regex -- none may be left
      assert.doesNotMatch(out, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
  });
});
