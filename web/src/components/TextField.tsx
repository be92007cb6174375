/** A labelled text input with an optional hint under it, as the forms use them. */
import { useId, type ReactNode } from 'react';

export interface TextFieldProps {
  label: string;
  value: string;
  onChange: (value: string) => void;
  placeholder?: string;
  /** Command lines and quantities: monospaced, no spell check. */
  code?: boolean;
  required?: boolean;
  /** The id of a datalist of suggestions. */
  list?: string;
  hint?: ReactNode;
  /** Extra content after the input (e.g. its datalist). */
  children?: ReactNode;
}

export function TextField({
  label,
  value,
  onChange,
  placeholder,
  code,
  required,
  list,
  hint,
  children,
}: TextFieldProps) {
  const id = useId();
  const hintId = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type="text"
        className={code ? 'mono' : undefined}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        placeholder={placeholder}
        list={list}
        aria-describedby={hint ? hintId : undefined}
        autoComplete="off"
        spellCheck={code ? false : undefined}
        required={required}
      />
      {children}
      {hint && (
        <p className="hint" id={hintId}>
          {hint}
        </p>
      )}
    </div>
  );
}
