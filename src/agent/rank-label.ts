/**
 * Labels a gang member's output with its rank, line by line ("2: text"), as `srun --label` does:
 * the members' logs share one job log, and a line cut in two by a read must still carry one
 * label, so an unfinished line waits for its end. It works on bytes, splitting at the newline
 * byte only: whatever the output's encoding, each line comes out as it was written. A line longer
 * than MAX_LINE is cut there and goes on in a line of its own: what waits is bounded, so a job
 * that writes gigabytes without a newline cannot fill the agent's memory (the agent runs as root).
 */
const NEWLINE = 0x0a;
/** The longest unfinished line kept back. */
export const MAX_LINE = 64 * 1024;

export class RankLabel {
  private partial: Buffer = Buffer.alloc(0);
  private readonly label: Buffer;

  constructor(label: string) {
    this.label = Buffer.from(label, 'utf8');
  }

  /** The complete lines of `data` (with what came before it), labelled; keeps the rest. */
  write(data: Buffer): Buffer {
    const end = data.lastIndexOf(NEWLINE) + 1;
    if (end === 0) {
      this.partial = Buffer.concat([this.partial, data]);
      return this.partial.length >= MAX_LINE ? this.end() : Buffer.alloc(0);
    }
    const lines = Buffer.concat([this.partial, data.subarray(0, end)]);
    this.partial = Buffer.from(data.subarray(end));
    const out: Buffer[] = [];
    for (let at = 0; at < lines.length;) {
      const next = lines.indexOf(NEWLINE, at) + 1;
      out.push(this.label, lines.subarray(at, next));
      at = next;
    }
    if (this.partial.length >= MAX_LINE) out.push(this.end());
    return Buffer.concat(out);
  }

  /** What is left at the end of the stream: a last line without its newline, labelled. */
  end(): Buffer {
    const rest = this.partial;
    this.partial = Buffer.alloc(0);
    return rest.length === 0 ? rest : Buffer.concat([this.label, rest, Buffer.from('\n')]);
  }
}
