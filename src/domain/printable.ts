/**
 * Text that came from a job (a reason, a message, a name) is data: a control character in it —
 * ESC (a terminal's escape sequences: retitling the window, moving the cursor, rewriting what
 * was printed), BEL, CR, a newline in a cell — and the bidirectional overrides that reorder
 * what a person reads are shown escaped (`\x1b`, `\r`, `\u202e`), never passed on as they are.
 * The CLI prints through it (cli/output.ts), and the dashboard shows job text through it.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** `s` with every control and bidi character escaped. */
export const printable = (s: string): string =>
  s.replace(CONTROL, (c) => {
    const code = c.charCodeAt(0);
    return (
      NAMED[c] ??
      (code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`)
    );
  });
