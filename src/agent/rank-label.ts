/**
 * Labels a gang member's output with its rank, line by line ("2: text"), as `srun --label` does:
 * the members' logs share one job log, and a line cut in two by a read must still carry one
 * label, so an unfinished line waits for its end.
 */
export class RankLabel {
  private partial = '';

  constructor(private readonly label: string) {}

  /** The complete lines of `text` (with what came before it), labelled; keeps the rest. */
  write(text: string): string {
    const data = this.partial + text;
    const end = data.lastIndexOf('\n') + 1;
    this.partial = data.slice(end);
    if (end === 0) return '';
    return this.label + data.slice(0, end - 1).replaceAll('\n', `\n${this.label}`) + '\n';
  }

  /** What is left at the end of the stream: a last line without its newline, labelled. */
  end(): string {
    const rest = this.partial;
    this.partial = '';
    return rest === '' ? '' : `${this.label}${rest}\n`;
  }
}
