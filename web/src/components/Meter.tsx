/** A quota meter: used (own), borrowed and free segments of one resource of a cluster queue. */
import { formatNumber, parseQuantity, unitFactor, unitName } from '../format.js';

interface Props {
  /** The accessible name, e.g. "default cpu". */
  label: string;
  resource: string;
  /** Quantities as the API gives them ("8", "1500m", "32Gi"). */
  nominal: string;
  used: string | undefined;
  borrowed: string | undefined;
}

export function Meter({ label, resource, nominal, used, borrowed }: Props) {
  const max = parseQuantity(nominal);
  const factor = max ? unitFactor(max.suffix) : 1;
  const unit = max ? unitName(max.suffix) : '';
  // Everything in the quota's own unit, so "32Gi" of memory reads as 32 (Gi).
  const inUnit = (q: string | undefined) => (parseQuantity(q ?? '0')?.value ?? 0) / factor;
  const nominalN = (max?.value ?? 0) / factor;
  const usedN = inUnit(used);
  const borrowedN = Math.min(inUnit(borrowed), usedN);
  const ownN = usedN - borrowedN;
  const freeN = Math.max(0, nominalN - usedN);
  const total = Math.max(nominalN, usedN) || 1;
  const pct = (n: number) => `${(100 * n) / total}%`;
  const valueNow = Math.round(usedN * 1000) / 1000;
  const text = `${formatNumber(usedN)}/${formatNumber(nominalN)}${unit}`;
  const borrowedText = borrowedN > 0 ? ` (${formatNumber(borrowedN)}${unit} borrowed)` : '';
  const valueText =
    `${formatNumber(usedN)}${unit} of ${formatNumber(nominalN)}${unit} used` +
    (borrowedN > 0 ? `, ${formatNumber(borrowedN)}${unit} borrowed` : '') +
    `, ${formatNumber(freeN)}${unit} free`;
  return (
    <div
      className="meter"
      role="meter"
      aria-label={label}
      aria-valuemin={0}
      aria-valuemax={nominalN}
      aria-valuenow={valueNow}
      aria-valuetext={valueText}
    >
      <div className="meter-text">
        <span className="meter-resource">{resource}</span> <span className="meter-figures">{text}</span>
        {borrowedText && <span className="meter-borrowed">{borrowedText}</span>}
      </div>
      <div className="meter-bar" aria-hidden="true">
        {ownN > 0 && <span className="seg seg-used" style={{ width: pct(ownN) }} />}
        {borrowedN > 0 && <span className="seg seg-borrowed" style={{ width: pct(borrowedN) }} />}
        {freeN > 0 && <span className="seg seg-free" style={{ width: pct(freeN) }} />}
        {usedN > nominalN && nominalN > 0 && (
          <span className="meter-nominal" style={{ left: pct(nominalN) }} />
        )}
      </div>
    </div>
  );
}

/** The key to the meters' colours (shown once per page). */
export function MeterLegend() {
  return (
    <ul className="legend" aria-label="Meter legend">
      <li>
        <span className="swatch seg-used" aria-hidden="true" /> used
      </li>
      <li>
        <span className="swatch seg-borrowed" aria-hidden="true" /> borrowed from the cohort
      </li>
      <li>
        <span className="swatch seg-free" aria-hidden="true" /> free
      </li>
    </ul>
  );
}
